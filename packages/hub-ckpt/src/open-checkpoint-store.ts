// Opening a session's checkpoint store from what a user typed (`user/name` or `file://path`), with the checks
// a writer needs before its first write: a token for a Hub store, and an endpoint the token may travel to.
import { InvalidCheckpointOptionError, HubAuthError } from './errors';
import { openStore } from './open-store';
import { describeHubTokenSearch, resolveHubToken } from './resolve-hub-token';
import type { CheckpointStore } from './types';

/** Options of {@link openCheckpointStore}. */
export interface OpenCheckpointStoreOptions {
  /** `user/name` (Hub) or `file://path` (directory). */
  repo: string;
  /** @default "model" */
  repoType?: 'model' | 'dataset';
  /** Create the Hub repo private. @default true */
  private?: boolean;
  /** Hub endpoint. @default env.HF_ENDPOINT (an empty one means unset), else https://huggingface.co */
  endpoint?: string | null;
  /** Fail fast when a Hub store has no token (writes need one). */
  needsWrite: boolean;
  /** Where the token is looked up, HF_ENDPOINT, and SOUP_HUB_RETRIES (retries of a failed Hub call). */
  env: Record<string, string | undefined>;
  /** Base for relative `file://` paths. */
  cwd: string;
  /** Where retry warnings go. */
  warn: (line: string) => void;
  /** What to call the repo in messages (a flag or a config field). @default "--repo" */
  flag?: string;
}

const REPO = /^(file:.+|[A-Za-z0-9][\w.-]*\/[A-Za-z0-9][\w.-]*)$/;
const HUB_URL = /^https?:\/\/(?:www\.)?(?:huggingface\.co|hf\.co)\/(?:datasets\/)?([^/?#]+\/[^/?#]+)(?:[/?#].*)?$/;

/** What a refused repo most likely meant: a path as `file://path`, a Hub page's URL as its `user/name`. */
function repoGuess(repo: string): string | null {
  const id = HUB_URL.exec(repo)?.[1];
  if (id !== undefined) return REPO.test(id) ? id : null;
  if (/^(\.{1,2}\/|\/|~\/)/.test(repo) || repo === '.' || repo === '..') return `file://${repo}`;
  return null;
}

/**
 * A DirStore for file:// repos, else a HubStore; refuses a Hub write without a token up front. The token is
 * found as huggingface_hub finds it: HF_TOKEN, the file HF_TOKEN_PATH names, $HF_HOME/token, then
 * ~/.cache/huggingface/token (what `hf auth login` writes); it is never printed.
 */
export function openCheckpointStore(opts: OpenCheckpointStoreOptions): CheckpointStore {
  const flag = opts.flag ?? '--repo';
  if (!REPO.test(opts.repo)) {
    const guess = repoGuess(opts.repo);
    throw new InvalidCheckpointOptionError(
      `${flag} ${JSON.stringify(opts.repo)} is neither a Hub repo id (user/name) nor a directory (file://path)` +
        (guess === null ? '' : `: did you mean \`${flag} ${guess}\`?`),
      { field: 'repo' },
    );
  }
  const isHub = !opts.repo.startsWith('file:');
  if (isHub && opts.needsWrite) {
    const found = resolveHubToken({ env: opts.env });
    if (found.token === null) {
      throw new HubAuthError(
        `${flag} ${opts.repo} is a Hugging Face repo and no token was found; looked in ` +
          `${describeHubTokenSearch(found)}: ` +
          'export HF_TOKEN=<a token with write access>, or run `hf auth login`, or use file://<dir> for a ' +
          'directory store',
        { status: 0 },
      );
    }
  }
  const retries = Number(opts.env.SOUP_HUB_RETRIES ?? '');
  // An empty HF_ENDPOINT means unset, as for the Python hub client.
  const env = { ...opts.env };
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
    cwd: opts.cwd,
    ...(opts.endpoint ? { endpoint: opts.endpoint } : {}),
    ...(Number.isInteger(retries) && retries >= 0 && opts.env.SOUP_HUB_RETRIES ? { retry: { retries } } : {}),
    logger: { warn: (line) => opts.warn(line) },
  });
}

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

/**
 * Refuses a Hub endpoint that would send the token in clear or to a surprise place: only `https://`,
 * or `http://` to a loopback address (a local mirror or test server), is accepted. `name` is what the
 * message calls the value (a flag, a config field, an env var).
 */
export function checkEndpoint(value: string, name: string): void {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidCheckpointOptionError(
      `${name} ${JSON.stringify(value)} is not a URL: use https://huggingface.co (or unset it)`,
      { field: 'endpoint' },
    );
  }
  if (url.username || url.password)
    throw new InvalidCheckpointOptionError(`${name} must not carry credentials in the URL: put the token in HF_TOKEN`, {
      field: 'endpoint',
    });
  if (url.protocol === 'https:') return;
  if (url.protocol === 'http:' && LOOPBACK.test(url.hostname)) return;
  throw new InvalidCheckpointOptionError(
    `${name} ${JSON.stringify(`${url.protocol}//${url.host}`)} is refused: the Hub token would travel ` +
      `${url.protocol === 'http:' ? 'in clear text' : `over ${url.protocol}`}; use an https:// endpoint (http:// ` +
      `only to a loopback address such as 127.0.0.1)`,
    { field: 'endpoint' },
  );
}

/** The default directory store of an output folder: `<output>-ckpt`, its sibling (`rm -rf <output>` keeps it). */
export function defaultStoreDir(output: string): string {
  return `${output.replace(/[\\/]+$/, '')}-ckpt`;
}
