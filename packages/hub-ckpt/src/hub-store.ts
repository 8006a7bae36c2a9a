import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Readable, type Writable } from 'node:stream';
import type { ReadableStream as NodeWebReadableStream } from 'node:stream/web';
import { createRepo, downloadFile, HubApiError, listFiles, pathsInfo, type RepoDesignation } from '@huggingface/hub';
import { HubAuthError, StoreError } from './errors';
import { commitIdempotent } from './_hub-commit';
import { checkHubStoreOptions, hubFailure } from './_hub-store-checks';
import { fsyncPath, hashWhileStreaming } from './_fs';
import { assertSafeName, hubUrlPath } from './_paths';
import { cleanHubToken, resolveHubToken } from './resolve-hub-token';
import { makeRetryingFetch, type RetryOptions } from './_retry-fetch';
import { streamBlobUploads } from './_stream-upload';
import type { CheckpointStore, HubCkptLogger, StoreCommitParams, StoreEntry } from './types';

export type { RetryOptions } from './_retry-fetch';

export interface HubStoreOptions {
  /** Repo id, `namespace/name`. */
  repo: string;
  /** Repo type. @default "model" */
  repoType?: 'model' | 'dataset';
  /**
   * Hub token (trimmed). Never logged nor put in an error.
   * @default the first of HF_TOKEN, the file HF_TOKEN_PATH names, $HF_HOME/token, ~/.cache/huggingface/token (see
   * resolveHubToken)
   */
  token?: string;
  /** Hub endpoint. @default env.HF_ENDPOINT, else "https://huggingface.co" */
  endpoint?: string;
  /** Create the repo private when the first push creates it. @default true */
  private?: boolean;
  /**
   * Retries on 429, 5xx and network errors, honouring `Retry-After`. @default {retries: 5, baseDelayMs: 500,
   * maxDelayMs: 60000}
   */
  retry?: RetryOptions;
  /**
   * fetch to use (wrapped with the retries). The default sends an LFS upload streamed from its file (constant
   * memory); an injected fetch gets it as the client made it (a Blob body) and decides how it is sent.
   * @default globalThis.fetch
   */
  fetch?: typeof fetch;
  /** Environment to read the token (see resolveHubToken) and HF_ENDPOINT from. @default process.env */
  env?: Record<string, string | undefined>;
  /** Home directory for the default token file `~/.cache/huggingface/token`. @default env.HOME, else os.homedir() */
  homeDir?: string;
  /** Retry warnings go here. @default silent */
  logger?: HubCkptLogger;
  /**
   * Upload through Xet when the Hub offers it. Off by default so uploads use the LFS basic
   * transfer, whose sha256 oids the verify step reads back from the tree listing. @default false
   */
  useXet?: boolean;
}

/** A checkpoint store over a Hugging Face Hub repo, through the official `@huggingface/hub` client. */
/** A listed file as a StoreEntry: an LFS file by its sha256 oid, a regular one by its git blob id. */
function storeEntry(e: { path: string; size: number; oid?: string; lfs?: { oid: string } | undefined }): StoreEntry {
  if (e.lfs) return { path: e.path, sizeBytes: e.size, sha256: e.lfs.oid };
  return e.oid ? { path: e.path, sizeBytes: e.size, gitOid: e.oid } : { path: e.path, sizeBytes: e.size };
}

export class HubStore implements CheckpointStore {
  readonly kind = 'hub' as const;
  readonly description: string;
  /** `namespace/name`. */
  readonly repoId: string;
  readonly repoType: 'model' | 'dataset';
  /** Endpoint without credentials or trailing slash. */
  readonly endpoint: string;
  readonly #token: string | undefined;
  readonly #fetch: typeof fetch;
  readonly #private: boolean;
  readonly #useXet: boolean;
  readonly #repo: RepoDesignation;
  readonly #logger: HubCkptLogger | undefined;

  constructor(opts: HubStoreOptions) {
    const env = opts.env ?? process.env;
    const { repoType, endpoint } = checkHubStoreOptions(opts, env);
    endpoint.username = '';
    endpoint.password = '';
    this.endpoint = endpoint.href.replace(/\/+$/, '');
    const token =
      opts.token !== undefined
        ? cleanHubToken(opts.token)
        : resolveHubToken({ env, ...(opts.homeDir !== undefined ? { homeDir: opts.homeDir } : {}) }).token;
    this.#token = token ?? undefined;
    this.repoId = opts.repo;
    this.repoType = repoType;
    this.#repo = { type: repoType, name: opts.repo };
    this.#private = opts.private ?? true;
    this.#useXet = opts.useXet ?? false;
    this.#logger = opts.logger;
    this.description = `hub ${repoType} ${opts.repo} @ ${this.endpoint}`;
    this.#fetch = makeRetryingFetch({
      ...opts.retry,
      // An injected fetch sees every request as the client made it; the default streams LFS uploads.
      fetch: opts.fetch ?? streamBlobUploads(globalThis.fetch.bind(globalThis)),
      logger: opts.logger,
      secrets: [this.#token],
    });
  }

  /** Whether a token is configured (the token itself is never exposed). */
  get hasToken(): boolean {
    return this.#token !== undefined;
  }

  private creds(): { accessToken?: string } {
    return this.#token === undefined ? {} : { accessToken: this.#token };
  }

  private requireToken(what: string): string {
    if (this.#token === undefined) {
      throw new HubAuthError(
        `${what} on ${this.description} needs a token: set HF_TOKEN (or HF_TOKEN_PATH, or run "hf auth login") to ` +
          `a Hugging Face token with write access.`,
        { status: 0 },
      );
    }
    if (!this.#token.startsWith('hf_')) {
      throw new HubAuthError(
        `${what} on ${this.description}: the token does not look like a Hugging Face token (they start with "hf_").`,
        {
          status: 0,
        },
      );
    }
    return this.#token;
  }

  private fail(what: string, err: unknown): never {
    return hubFailure(what, err, { description: this.description, repoId: this.repoId, token: this.#token });
  }

  async exists(): Promise<boolean> {
    const url = `${this.endpoint}/api/${this.repoType}s/${this.repoId}`;
    let res: Response;
    try {
      res = await this.#fetch(url, { headers: this.#token ? { Authorization: `Bearer ${this.#token}` } : {} });
    } catch (err) {
      this.fail('checking the repo', err);
    }
    await res.body?.cancel().catch(() => undefined);
    if (res.ok) return true;
    if (res.status === 404) return false;
    this.fail(
      'checking the repo',
      new HubApiError(
        url,
        res.status,
        res.headers.get('X-Request-Id') ?? undefined,
        `Api error with status ${res.status}`,
      ),
    );
  }

  async create(): Promise<void> {
    const accessToken = this.requireToken('creating the repo');
    try {
      await createRepo({
        repo: this.#repo,
        accessToken,
        hubUrl: this.endpoint,
        fetch: this.#fetch,
        visibility: this.#private ? 'private' : 'public',
      });
    } catch (err) {
      if (err instanceof HubApiError && err.statusCode === 409) return; // already there
      this.fail('creating the repo', err);
    }
  }

  async list(params: { prefix: string }): Promise<StoreEntry[]> {
    const prefix = params.prefix.replace(/\/+$/, '');
    if (prefix !== '') assertSafeName(prefix);
    const out: StoreEntry[] = [];
    try {
      for await (const e of listFiles({
        repo: this.#repo,
        ...this.creds(),
        hubUrl: this.endpoint,
        fetch: this.#fetch,
        recursive: true,
        ...(prefix === '' ? {} : { path: hubUrlPath(prefix) }),
      })) {
        if (e.type !== 'file') continue;
        out.push(storeEntry(e));
      }
    } catch (err) {
      if (err instanceof HubApiError && err.statusCode === 404) return [];
      this.fail(`listing ${prefix || '/'}`, err);
    }
    return out;
  }

  async stat(params: { paths: string[]; times?: boolean }): Promise<StoreEntry[]> {
    if (params.paths.length === 0) return [];
    for (const p of params.paths) assertSafeName(p);
    try {
      const infos = await pathsInfo({
        repo: this.#repo,
        ...this.creds(),
        hubUrl: this.endpoint,
        fetch: this.#fetch,
        paths: params.paths,
        expand: params.times === true,
      });
      return infos
        .filter((i) => i.type === 'file')
        .map((i) => {
          const date = (i as { lastCommit?: { date?: Date | string } }).lastCommit?.date;
          return date ? { ...storeEntry(i), modifiedAt: new Date(date).toISOString() } : storeEntry(i);
        });
    } catch (err) {
      if (err instanceof HubApiError && err.statusCode === 404) return [];
      this.fail('reading paths-info', err);
    }
  }

  /** The retrying fetch, aborted by `signal` too. */
  private fetchFor(signal: AbortSignal | undefined): typeof fetch {
    if (!signal) return this.#fetch;
    const inner = this.#fetch;
    return ((input: Parameters<typeof fetch>[0], init?: RequestInit) =>
      inner(input, {
        ...init,
        signal: init?.signal ? AbortSignal.any([init.signal, signal]) : signal,
      })) as typeof fetch;
  }

  private async blob(path: string, signal?: AbortSignal): Promise<Blob | null> {
    assertSafeName(path);
    try {
      return await downloadFile({
        repo: this.#repo,
        path: hubUrlPath(path),
        ...this.creds(),
        hubUrl: this.endpoint,
        fetch: this.fetchFor(signal),
      });
    } catch (err) {
      this.fail(`downloading ${path}`, err);
    }
  }

  async readFile(params: { path: string }): Promise<Uint8Array | null> {
    const blob = await this.blob(params.path);
    if (blob === null) return null;
    try {
      return new Uint8Array(await blob.arrayBuffer());
    } catch (err) {
      this.fail(`downloading ${params.path}`, err);
    }
  }

  private async streamBlob(
    path: string,
    sink: Writable | null,
    signal: AbortSignal | undefined,
  ): Promise<{ sizeBytes: number; sha256: string } | null> {
    const blob = await this.blob(path, signal);
    if (blob === null) return null;
    try {
      const source = Readable.fromWeb(blob.stream() as unknown as NodeWebReadableStream<Uint8Array>);
      return await hashWhileStreaming(source, sink, signal);
    } catch (err) {
      if (signal?.aborted) throw signal.reason ?? err;
      return this.fail(`downloading ${path}`, typeof err === 'string' ? new Error(err) : err);
    }
  }

  async hash(params: { path: string; signal?: AbortSignal }): Promise<{ sizeBytes: number; sha256: string } | null> {
    return this.streamBlob(params.path, null, params.signal);
  }

  async download(params: {
    path: string;
    dest: string;
    signal?: AbortSignal;
  }): Promise<{ sizeBytes: number; sha256: string }> {
    await mkdir(dirname(params.dest), { recursive: true });
    const got = await this.streamBlob(params.path, createWriteStream(params.dest), params.signal);
    if (got === null)
      throw new StoreError(`downloading ${params.path} from ${this.description}: not found`, { status: 404 });
    await fsyncPath(params.dest);
    return got;
  }

  /**
   * The repo's stored bytes, history included, as the Hub reports them (`expand[]=usedStorage`); null when it does not.
   */
  async usedStorageBytes(): Promise<number | null> {
    const url = `${this.endpoint}/api/${this.repoType}s/${this.repoId}?expand[]=usedStorage`;
    let res: Response;
    try {
      res = await this.#fetch(url, { headers: this.#token ? { Authorization: `Bearer ${this.#token}` } : {} });
    } catch (err) {
      this.fail('reading the used storage', err);
    }
    if (!res.ok) {
      await res.body?.cancel().catch(() => undefined);
      if (res.status === 400 || res.status === 404) return null;
      this.fail(
        'reading the used storage',
        new HubApiError(
          url,
          res.status,
          res.headers.get('X-Request-Id') ?? undefined,
          `Api error with status ${res.status}`,
        ),
      );
    }
    const body = (await res.json().catch(() => null)) as { usedStorage?: unknown } | null;
    return typeof body?.usedStorage === 'number' && Number.isFinite(body.usedStorage) ? body.usedStorage : null;
  }

  /**
   * Squashes the main branch's history into one commit (`POST /api/{type}s/{id}/super-squash/main`, what
   * huggingface_hub's `super_squash_history` calls), so LFS bytes only pruned commits reach can be freed.
   * The files, and so latest.json and the lease, are unchanged; the head commit id changes.
   */
  /** Commits in the main branch's history (the Hub's `X-Total-Count` of its commit list); null when it says none. */
  async historyLength(): Promise<number | null> {
    const url = `${this.endpoint}/api/${this.repoType}s/${this.repoId}/commits/main?limit=1`;
    let res: Response;
    try {
      res = await this.#fetch(url, { headers: this.#token ? { Authorization: `Bearer ${this.#token}` } : {} });
    } catch (err) {
      this.fail('reading the history length', err);
    }
    await res.body?.cancel().catch(() => undefined);
    const n = Number(res.headers.get('X-Total-Count') ?? Number.NaN);
    return res.ok && Number.isInteger(n) && n >= 0 ? n : null;
  }

  async squashHistory(params: { message: string }): Promise<void> {
    const accessToken = this.requireToken('squashing the history');
    const url = `${this.endpoint}/api/${this.repoType}s/${this.repoId}/super-squash/main`;
    let res: Response;
    try {
      res = await this.#fetch(url, {
        method: 'POST',
        headers: { Authorization: `Bearer ${accessToken}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ message: params.message }),
      });
    } catch (err) {
      this.fail('squashing the history', err);
    }
    if (!res.ok) {
      const text = await res.text().catch(() => '');
      this.fail(
        'squashing the history',
        new HubApiError(
          url,
          res.status,
          res.headers.get('X-Request-Id') ?? undefined,
          text.slice(0, 300) || `Api error with status ${res.status}`,
        ),
      );
    }
    await res.body?.cancel().catch(() => undefined);
  }

  /** Applies the operations as one idempotent commit (see {@link commitIdempotent}). */
  async commit(params: StoreCommitParams): Promise<void> {
    const accessToken = this.requireToken('committing');
    await commitIdempotent(
      {
        repo: this.#repo,
        repoType: this.repoType,
        repoId: this.repoId,
        endpoint: this.endpoint,
        description: this.description,
        accessToken,
        creds: this.creds(),
        fetch: this.#fetch,
        useXet: this.#useXet,
        logger: this.#logger,
        fail: (what, err) => this.fail(what, err),
      },
      params,
    );
  }
}
