import { isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DirStore } from './dir-store';
import { InvalidCheckpointOptionError } from './errors';
import { HubStore, type RetryOptions } from './hub-store';
import type { CheckpointStore, HubCkptLogger } from './types';

export interface OpenStoreOptions {
  /** `namespace/name` for a Hub repo, or `file:///abs/path` (or `file://rel/path`, from `cwd`) for a directory. */
  repo: string;
  /** Hub token. @default resolved from env and the token files (see resolveHubToken) */
  token?: string;
  /** Hub endpoint. @default env.HF_ENDPOINT, else https://huggingface.co */
  endpoint?: string;
  /** @default "model" */
  repoType?: 'model' | 'dataset';
  /** Create the Hub repo private. @default true */
  private?: boolean;
  /** @default see HubStore */
  retry?: RetryOptions;
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
  /** @default process.env */
  env?: Record<string, string | undefined>;
  /** Home directory for the default token file (see HubStoreOptions.homeDir). @default env.HOME, else os.homedir() */
  homeDir?: string;
  /** Base for relative `file://` paths. @default process.cwd() */
  cwd?: string;
  /** @default silent */
  logger?: HubCkptLogger;
}

/** A DirStore for `file://` repos, else a HubStore (what `soup train --hub-repo <id|file://path>` takes). */
export function openStore(opts: OpenStoreOptions): CheckpointStore {
  const repo = opts.repo;
  if (typeof repo !== 'string' || repo.trim() === '') {
    throw new InvalidCheckpointOptionError(
      'repo is empty: pass a Hub repo id "namespace/name" or a directory as "file:///path".',
      { field: 'repo' },
    );
  }
  if (repo.startsWith('file:')) {
    let root: string;
    if (repo.startsWith('file:///')) root = fileURLToPath(repo);
    else {
      const rest = decodeURIComponent(repo.replace(/^file:(\/\/)?/, ''));
      if (rest === '')
        throw new InvalidCheckpointOptionError(
          `repo ${JSON.stringify(repo)} names no directory: use "file:///abs/path".`,
          { field: 'repo' },
        );
      root = isAbsolute(rest) ? rest : resolve(opts.cwd ?? process.cwd(), rest);
    }
    return new DirStore({ root });
  }
  return new HubStore({
    repo,
    token: opts.token,
    endpoint: opts.endpoint,
    repoType: opts.repoType,
    private: opts.private,
    retry: opts.retry,
    fetch: opts.fetch,
    env: opts.env,
    ...(opts.homeDir !== undefined ? { homeDir: opts.homeDir } : {}),
    logger: opts.logger,
  });
}
