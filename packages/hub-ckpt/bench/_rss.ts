// Peak memory of one push and one cold pull of a checkpoint with one large file, each in a child process of
// its own (bench/_rss-child.ts) so the figure is soup's alone: the Hub server stays in this process.
import { fileURLToPath } from 'node:url';
import { runNode, type HubServer } from '@soup/test-utils';

const CHILD = fileURLToPath(new URL('./_rss-child.ts', import.meta.url));

export interface TransferRss {
  /** VmHWM once the child was ready, before the transfer. */
  baselineKiB: number;
  /** VmHWM after the transfer. */
  peakKiB: number;
  /** peakKiB − baselineKiB, in MiB. */
  overBaselineMiB: number;
  ms: number;
}

async function runChild(
  mode: 'push' | 'pull',
  p: { server: HubServer; workDir: string; repo: string; bytes: number; timeoutMs: number; dirRoot?: string },
): Promise<TransferRss> {
  const res = await runNode(['--import', 'tsx', CHILD], {
    timeoutMs: p.timeoutMs,
    env: {
      ...process.env,
      SOUP_RSS_MODE: mode,
      SOUP_RSS_WORK: p.workDir,
      SOUP_RSS_REPO: p.repo,
      SOUP_RSS_BYTES: String(p.bytes),
      HF_ENDPOINT: p.server.url,
      HF_TOKEN: p.server.token,
      ...(p.dirRoot === undefined ? {} : { SOUP_RSS_DIR_ROOT: p.dirRoot }),
    },
  });
  const line = /^RSS (.*)$/m.exec(res.stdout)?.[1];
  if (res.code !== 0 || line === undefined)
    throw new Error(`${mode} child failed (${res.code ?? res.signal}): ${res.stderr.slice(-2000)}`);
  const got = JSON.parse(line) as { baselineKiB: number; peakKiB: number; ms: number };
  return { ...got, overBaselineMiB: Number(((got.peakKiB - got.baselineKiB) / 1024).toFixed(1)) };
}

/**
 * Pushes a checkpoint whose `optimizer.pt` is `bytes` long (sparse on disk), then pulls it into a fresh folder: to
 * the Hub server, or with `dirRoot` to a directory store there.
 */
export async function measureTransferRss(p: {
  server: HubServer;
  workDir: string;
  repo: string;
  bytes: number;
  /** A directory store's root instead of the Hub. @default the Hub */
  dirRoot?: string;
  /** Per child. @default 600000 */
  timeoutMs?: number;
}): Promise<{ push: TransferRss; pull: TransferRss }> {
  const q = { ...p, timeoutMs: p.timeoutMs ?? 600_000 };
  const push = await runChild('push', q);
  const pull = await runChild('pull', q);
  return { push, pull };
}
