// Test-only helpers for data-parallel trainers: the rank launcher, a free port, weights compared within a tolerance.
import { readSafetensors } from '@soup/onnx-train';
import { spawnUntil } from '@soup/test-utils';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

export const LAUNCH_RANKS = fileURLToPath(new URL('../../../examples/launch-ranks.mjs', import.meta.url));

/** A TCP port nothing listens on right now (for MASTER_PORT). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

/**
 * Starts `ranks` ranks of `argv` under examples/launch-ranks.mjs and resolves once the output matches `marker`,
 * with each rank's pid (from the launcher's `launch-ranks: rank R pid P` lines).
 */
export async function launchRanks(p: { ranks: number; argv: string[]; env: NodeJS.ProcessEnv; marker: RegExp }) {
  const port = await freePort();
  const launched = await spawnUntil(
    process.execPath,
    [LAUNCH_RANKS, '--nproc_per_node', String(p.ranks), '--master_port', String(port), '--', ...p.argv],
    p.marker,
    { env: p.env, timeoutMs: 60_000 },
  );
  const pids = [...launched.output.matchAll(/launch-ranks: rank (\d+) pid (\d+)/g)].map((m) => Number(m[2]));
  return { ...launched, pids };
}

/** The largest |a − b| over a tensor, relative to that tensor's largest |b|, over every tensor of two files. */
export function maxRelDiff(a: string, b: string): number {
  const x = readSafetensors(a).tensors;
  const y = readSafetensors(b).tensors;
  if (x.size === 0 || x.size !== y.size) throw new Error(`${a} and ${b} hold different tensors`);
  let worst = 0;
  for (const [name, t] of x) {
    const u = y.get(name);
    if (!u || u.data.length !== t.data.length) throw new Error(`${name}: missing or another shape in ${b}`);
    let diff = 0;
    let scale = 0;
    for (let i = 0; i < t.data.length; i++) {
      diff = Math.max(diff, Math.abs(Number(t.data[i]) - Number(u.data[i])));
      scale = Math.max(scale, Math.abs(Number(u.data[i])));
    }
    worst = Math.max(worst, diff / Math.max(scale, 1e-30));
  }
  return worst;
}
