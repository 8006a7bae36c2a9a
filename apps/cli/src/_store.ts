// Opening a checkpoint store from a --repo value, with the CLI's checks.
import { describeHubTokenSearch, openStore, resolveHubToken, type CheckpointStore } from '@soup/hub-ckpt';
import type { CommandContext } from './_context';
import { TokenMissingError, UsageError } from './errors';

/** Options of {@link openCheckpointStore}. */
export interface OpenCheckpointStoreOptions {
  ctx: CommandContext;
  /** `user/name` (Hub) or `file://path` (directory). */
  repo: string;
  repoType?: 'model' | 'dataset';
  private?: boolean;
  endpoint?: string | null;
  /** Fail fast when a Hub store has no token (writes need one). */
  needsWrite: boolean;
  /** Where retry warnings go. */
  log?: (line: string) => void;
  /** What to call the flag in messages. @default "--repo" */
  flag?: string;
}

const REPO = /^(file:.+|[A-Za-z0-9][\w.-]*\/[A-Za-z0-9][\w.-]*)$/;

/**
 * A DirStore for file:// repos, else a HubStore; refuses a Hub write without a token up front. The token is
 * found as huggingface_hub finds it: HF_TOKEN, the file HF_TOKEN_PATH names, $HF_HOME/token, then
 * ~/.cache/huggingface/token (what `hf auth login` writes); it is never printed.
 */
export function openCheckpointStore(opts: OpenCheckpointStoreOptions): CheckpointStore {
  const { ctx } = opts;
  const flag = opts.flag ?? '--repo';
  if (!REPO.test(opts.repo))
    throw new UsageError(
      `${flag} ${JSON.stringify(opts.repo)} is neither a Hub repo id (user/name) nor a directory (file://path)`,
    );
  const isHub = !opts.repo.startsWith('file:');
  if (isHub && opts.needsWrite) {
    const found = resolveHubToken({ env: ctx.env });
    if (found.token === null) {
      throw new TokenMissingError(
        `${flag} ${opts.repo} is a Hugging Face repo and no token was found; looked in ` +
          `${describeHubTokenSearch(found)}: ` +
          'export HF_TOKEN=<a token with write access>, or run `hf auth login`, or use file://<dir> for a ' +
          'directory store',
      );
    }
  }
  const retries = Number(ctx.env.SOUP_HUB_RETRIES ?? '');
  // An empty HF_ENDPOINT means unset, as for the Python hub client.
  const env = { ...ctx.env };
  if (!env.HF_ENDPOINT) delete env.HF_ENDPOINT;
  if (isHub) {
    if (opts.endpoint) checkEndpoint(opts.endpoint, 'hub.endpoint');
    else if (env.HF_ENDPOINT) checkEndpoint(env.HF_ENDPOINT, 'HF_ENDPOINT');
  }
  return openStore({
    repo: opts.repo,
    repoType: opts.repoType ?? 'model',
    private: opts.private ?? true,
    env,
    cwd: ctx.cwd,
    ...(opts.endpoint ? { endpoint: opts.endpoint } : {}),
    ...(Number.isInteger(retries) && retries >= 0 && ctx.env.SOUP_HUB_RETRIES ? { retry: { retries } } : {}),
    logger: { warn: (line) => (opts.log ?? ctx.warn)(line) },
  });
}

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

/**
 * Refuses a Hub endpoint that would send the token in clear or to a surprise place: only `https://`,
 * or `http://` to a loopback address (a local mirror or test server), is accepted.
 */
export function checkEndpoint(value: string, name: string): void {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`${name} ${JSON.stringify(value)} is not a URL: use https://huggingface.co (or unset it)`);
  }
  if (url.username || url.password)
    throw new UsageError(`${name} must not carry credentials in the URL: put the token in HF_TOKEN`);
  if (url.protocol === 'https:') return;
  if (url.protocol === 'http:' && LOOPBACK.test(url.hostname)) return;
  throw new UsageError(
    `${name} ${JSON.stringify(`${url.protocol}//${url.host}`)} is refused: the Hub token would travel ` +
      `${url.protocol === 'http:' ? 'in clear text' : `over ${url.protocol}`}; use an https:// endpoint (http:// ` +
      `only to a loopback address such as 127.0.0.1)`,
  );
}

/** The default directory store: `<output>-ckpt`, a sibling of the output folder. */
export function defaultStoreDir(output: string): string {
  return `${output.replace(/[\\/]+$/, '')}-ckpt`;
}
