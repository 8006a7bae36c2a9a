import { createHash } from 'node:crypto';
import { createWriteStream, openAsBlob } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Readable, Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as NodeWebReadableStream } from 'node:stream/web';
import {
  commitIter,
  createRepo,
  downloadFile,
  HubApiError,
  listFiles,
  pathsInfo,
  type CommitOperation,
  type RepoDesignation,
} from '@huggingface/hub';
import { ConcurrentWriteError, HubAuthError, InvalidCheckpointOptionError, StoreError } from './errors';
import { contentId, holds, type ContentId, type RemoteEntry } from './_content-id';
import { describeWriter } from './_describe-writer';
import { fsyncPath, sha256Hex } from './_fs';
import { assertSafeName } from './_paths';
import { redact } from './_redact';
import { makeRetryingFetch, type RetryOptions } from './_retry-fetch';
import type { CheckpointStore, HubCkptLogger, StoreCommitParams, StoreEntry, StoreOperation } from './types';

export type { RetryOptions } from './_retry-fetch';

export interface HubStoreOptions {
  /** Repo id, `namespace/name`. */
  repo: string;
  /** Repo type. @default "model" */
  repoType?: 'model' | 'dataset';
  /** Hub token. Never logged nor put in an error. @default env.HF_TOKEN */
  token?: string;
  /** Hub endpoint. @default env.HF_ENDPOINT, else "https://huggingface.co" */
  endpoint?: string;
  /** Create the repo private when the first push creates it. @default true */
  private?: boolean;
  /** Retries on 429, 5xx and network errors, honouring `Retry-After`. @default {retries: 5, baseDelayMs: 500, maxDelayMs: 60000} */
  retry?: RetryOptions;
  /** fetch to use (wrapped with the retries). @default globalThis.fetch */
  fetch?: typeof fetch;
  /** Environment to read HF_TOKEN / HF_ENDPOINT from. @default process.env */
  env?: Record<string, string | undefined>;
  /** Retry warnings go here. @default silent */
  logger?: HubCkptLogger;
  /**
   * Upload through Xet when the Hub offers it. Off by default so uploads use the LFS basic
   * transfer, whose sha256 oids the verify step reads back from the tree listing. @default false
   */
  useXet?: boolean;
}

const REPO_ID = /^[A-Za-z0-9][\w.-]*\/[A-Za-z0-9][\w.-]*$/;

/** A checkpoint store over a Hugging Face Hub repo, through the official `@huggingface/hub` client. */
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
    if (typeof opts.repo !== 'string' || !REPO_ID.test(opts.repo)) {
      throw new InvalidCheckpointOptionError(
        'repo',
        `repo ${JSON.stringify(opts.repo)} is not a Hub repo id: use "namespace/name" (or "file:///path" for a directory store via openStore).`,
      );
    }
    const repoType = opts.repoType ?? 'model';
    if (repoType !== 'model' && repoType !== 'dataset') {
      throw new InvalidCheckpointOptionError('repoType', `repoType must be "model" or "dataset", got ${JSON.stringify(repoType)}.`);
    }
    const endpointRaw = opts.endpoint ?? env.HF_ENDPOINT ?? 'https://huggingface.co';
    let endpoint: URL;
    try {
      endpoint = new URL(endpointRaw);
    } catch (err) {
      throw new InvalidCheckpointOptionError('endpoint', 'endpoint must be an http(s) URL such as https://huggingface.co.', { cause: err });
    }
    endpoint.username = '';
    endpoint.password = '';
    this.endpoint = endpoint.href.replace(/\/+$/, '');
    const token = opts.token ?? env.HF_TOKEN;
    this.#token = token === '' ? undefined : token;
    this.repoId = opts.repo;
    this.repoType = repoType;
    this.#repo = { type: repoType, name: opts.repo };
    this.#private = opts.private ?? true;
    this.#useXet = opts.useXet ?? false;
    this.#logger = opts.logger;
    this.description = `hub ${repoType} ${opts.repo} @ ${this.endpoint}`;
    this.#fetch = makeRetryingFetch({
      ...opts.retry,
      fetch: opts.fetch ?? globalThis.fetch.bind(globalThis),
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
        `${what} on ${this.description} needs a token: set HF_TOKEN (or pass token) to a Hugging Face token with write access.`,
        { status: 0 },
      );
    }
    if (!this.#token.startsWith('hf_')) {
      throw new HubAuthError(`${what} on ${this.description}: the token does not look like a Hugging Face token (they start with "hf_").`, {
        status: 0,
      });
    }
    return this.#token;
  }

  private fail(what: string, err: unknown): never {
    if (err instanceof HubAuthError || err instanceof StoreError || err instanceof InvalidCheckpointOptionError || err instanceof ConcurrentWriteError) throw err;
    if ((err as Error | undefined)?.name === 'AbortError' || (err as Error | undefined)?.name === 'TimeoutError') throw err;
    const secrets = [this.#token];
    if (err instanceof HubApiError) {
      const status = err.statusCode;
      const detail = redact(err.message, secrets);
      if (status === 401 || status === 403) {
        const hint =
          status === 401
            ? this.#token === undefined
              ? 'No token was given: set HF_TOKEN (or pass token) to a token with write access.'
              : 'The token is invalid, expired, or cannot see this repo: set HF_TOKEN to a valid token with write access.'
            : `The token is valid but lacks permission: use a token with write access to ${this.repoId}.`;
        throw new HubAuthError(redact(`${what} on ${this.description}: the Hub answered ${status}. ${hint} (${detail})`, secrets), {
          status,
          url: redact(err.url, secrets),
          requestId: err.requestId,
          cause: err,
        });
      }
      throw new StoreError(redact(`${what} on ${this.description} failed with HTTP ${status}: ${detail}`, secrets), {
        status,
        url: redact(err.url, secrets),
        requestId: err.requestId,
        cause: err,
      });
    }
    const e = err as Error & { cause?: { code?: string; message?: string } };
    if (e instanceof TypeError && /start with 'hf_'/.test(e.message)) {
      throw new HubAuthError(`${what} on ${this.description}: the token does not look like a Hugging Face token (they start with "hf_").`, {
        status: 0,
        cause: err,
      });
    }
    const reason = e.cause?.code ?? e.cause?.message ?? e.message ?? String(err);
    throw new StoreError(redact(`${what} on ${this.description} failed: ${e.message ?? String(err)} (${reason})`, secrets), { cause: err });
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
    this.fail('checking the repo', new HubApiError(url, res.status, res.headers.get('X-Request-Id') ?? undefined, `Api error with status ${res.status}`));
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
        ...(prefix === '' ? {} : { path: prefix }),
      })) {
        if (e.type !== 'file') continue;
        out.push(e.lfs ? { path: e.path, sizeBytes: e.size, sha256: e.lfs.oid } : { path: e.path, sizeBytes: e.size });
      }
    } catch (err) {
      if (err instanceof HubApiError && err.statusCode === 404) return [];
      this.fail(`listing ${prefix || '/'}`, err);
    }
    return out;
  }

  async stat(params: { paths: string[] }): Promise<StoreEntry[]> {
    if (params.paths.length === 0) return [];
    for (const p of params.paths) assertSafeName(p);
    try {
      const infos = await pathsInfo({ repo: this.#repo, ...this.creds(), hubUrl: this.endpoint, fetch: this.#fetch, paths: params.paths });
      return infos
        .filter((i) => i.type === 'file')
        .map((i) => (i.lfs ? { path: i.path, sizeBytes: i.size, sha256: i.lfs.oid } : { path: i.path, sizeBytes: i.size }));
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
      inner(input, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, signal]) : signal })) as typeof fetch;
  }

  private async blob(path: string, signal?: AbortSignal): Promise<Blob | null> {
    assertSafeName(path);
    try {
      return await downloadFile({ repo: this.#repo, path, ...this.creds(), hubUrl: this.endpoint, fetch: this.fetchFor(signal) });
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

  private async streamBlob(path: string, sink: Writable | null, signal: AbortSignal | undefined): Promise<{ sizeBytes: number; sha256: string } | null> {
    const blob = await this.blob(path, signal);
    if (blob === null) return null;
    const hash = createHash('sha256');
    let sizeBytes = 0;
    const tap = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        hash.update(chunk);
        sizeBytes += chunk.length;
        cb(null, sink ? chunk : undefined);
      },
    });
    try {
      const source = Readable.fromWeb(blob.stream() as unknown as NodeWebReadableStream<Uint8Array>);
      const o = signal ? { signal } : {};
      if (sink) await pipeline(source, tap, sink, o);
      else await pipeline(source, tap, new Writable({ write: (_c, _e, cb) => cb() }), o);
    } catch (err) {
      if (signal?.aborted) throw signal.reason ?? err;
      this.fail(`downloading ${path}`, typeof err === 'string' ? new Error(err) : err);
    }
    return { sizeBytes, sha256: hash.digest('hex') };
  }

  async hash(params: { path: string; signal?: AbortSignal }): Promise<{ sizeBytes: number; sha256: string } | null> {
    return this.streamBlob(params.path, null, params.signal);
  }

  async download(params: { path: string; dest: string; signal?: AbortSignal }): Promise<{ sizeBytes: number; sha256: string }> {
    await mkdir(dirname(params.dest), { recursive: true });
    const got = await this.streamBlob(params.path, createWriteStream(params.dest), params.signal);
    if (got === null) throw new StoreError(`downloading ${params.path} from ${this.description}: not found`, { status: 404 });
    await fsyncPath(params.dest);
    return got;
  }

  /** The head commit of the main branch (what a commit's parentCommit must be). */
  private async headCommit(signal: AbortSignal | undefined): Promise<string> {
    const url = `${this.endpoint}/api/${this.repoType}s/${this.repoId}`;
    let res: Response;
    try {
      res = await this.#fetch(url, { headers: this.#token ? { Authorization: `Bearer ${this.#token}` } : {}, ...(signal ? { signal } : {}) });
    } catch (err) {
      this.fail('reading the head commit', err);
    }
    if (!res.ok) {
      await res.body?.cancel().catch(() => undefined);
      this.fail('reading the head commit', new HubApiError(url, res.status, res.headers.get('X-Request-Id') ?? undefined, `Api error with status ${res.status}`));
    }
    const sha = ((await res.json()) as { sha?: unknown }).sha;
    if (typeof sha !== 'string' || sha === '') throw new StoreError(`reading the head commit of ${this.description}: the Hub sent no "sha"`, { url });
    return sha;
  }

  /** paths-info of `paths` (at `revision`), with the last commit of each when `expand`. */
  private async remoteEntries(paths: string[], revision: string | undefined, expand: boolean): Promise<Map<string, RemoteEntry & { lastCommit?: { id: string; title: string } }>> {
    const out = new Map<string, RemoteEntry & { lastCommit?: { id: string; title: string } }>();
    if (paths.length === 0) return out;
    let infos;
    try {
      infos = await pathsInfo({ repo: this.#repo, ...this.creds(), hubUrl: this.endpoint, fetch: this.#fetch, paths, expand, ...(revision ? { revision } : {}) });
    } catch (err) {
      if (err instanceof HubApiError && err.statusCode === 404) return out;
      this.fail('reading paths-info', err);
    }
    for (const i of infos) {
      if (i.type !== 'file') continue;
      out.set(i.path, {
        sizeBytes: i.size,
        ...(i.oid ? { gitOid: i.oid } : {}),
        ...(i.lfs ? { lfsOid: i.lfs.oid } : {}),
        ...(i.lastCommit ? { lastCommit: { id: i.lastCommit.id, title: i.lastCommit.title } } : {}),
      });
    }
    return out;
  }

  /** The operations whose effect is not yet in the repo (a delete of a gone file and a put whose bytes are there are done). */
  private async notYetApplied(ops: StoreOperation[], ids: Map<string, ContentId>): Promise<StoreOperation[]> {
    const remote = await this.remoteEntries([...new Set(ops.map((o) => o.path))], undefined, false);
    const left: StoreOperation[] = [];
    for (const op of ops) {
      if (op.kind === 'delete') {
        if (remote.has(op.path)) left.push(op);
        continue;
      }
      // Content ids are computed only here, when a commit needs reconciling (a second read of the file).
      let id = ids.get(op.path);
      if (id === undefined) {
        id = await contentId(op);
        ids.set(op.path, id);
      }
      if (!holds(remote.get(op.path), id)) left.push(op);
    }
    return left;
  }

  /** Throws ConcurrentWriteError unless `cond.path` at `head` still holds the expected content. */
  private async checkIfMatch(cond: { path: string; sha256: string | null }, head: string): Promise<void> {
    const remote = (await this.remoteEntries([cond.path], head, true)).get(cond.path);
    let sha: string | null = null;
    let bytes: Uint8Array | null = null;
    if (remote !== undefined) {
      if (remote.lfsOid !== undefined) sha = remote.lfsOid;
      else {
        try {
          const blob = await downloadFile({ repo: this.#repo, path: cond.path, revision: head, ...this.creds(), hubUrl: this.endpoint, fetch: this.#fetch });
          bytes = blob === null ? null : new Uint8Array(await blob.arrayBuffer());
        } catch (err) {
          this.fail(`downloading ${cond.path}`, err);
        }
        sha = bytes === null ? null : sha256Hex(bytes);
      }
    }
    if (sha === cond.sha256) return;
    const by = remote?.lastCommit ? `commit ${remote.lastCommit.id.slice(0, 12)} "${remote.lastCommit.title}", ` : '';
    throw new ConcurrentWriteError({ path: cond.path, writer: `${by}${describeWriter(bytes)}`, where: this.description });
  }

  private async commitOnce(params: StoreCommitParams, ops: StoreOperation[], parentCommit: string, accessToken: string, signal: AbortSignal | undefined): Promise<void> {
    const operations: CommitOperation[] = [];
    for (const op of ops) {
      if (op.kind === 'delete') operations.push({ operation: 'delete', path: op.path });
      else if ('localPath' in op) operations.push({ operation: 'addOrUpdate', path: op.path, content: await openAsBlob(op.localPath) });
      else operations.push({ operation: 'addOrUpdate', path: op.path, content: new Blob([op.bytes]) });
    }
    const failed: string[] = [];
    const it = commitIter({
      repo: this.#repo,
      accessToken,
      hubUrl: this.endpoint,
      fetch: this.#fetch,
      title: params.message,
      operations,
      parentCommit,
      useXet: this.#useXet,
      ...(signal ? { abortSignal: signal } : {}),
    });
    for (let r = await it.next(); !r.done; r = await it.next()) {
      const ev = r.value;
      if (ev.event === 'phase' && ev.phase === 'committing') await params.onProgress?.({ stage: 'commit' });
      else if (ev.event === 'fileProgress' && ev.state === 'uploading' && ev.progress === 1) {
        await params.onProgress?.({ stage: 'file', kind: 'put', path: ev.path });
      } else if (ev.event === 'fileProgress' && ev.state === 'error') failed.push(ev.path);
    }
    if (failed.length > 0) throw new StoreError(`committing "${params.message}" on ${this.description}: failed to upload ${failed.join(', ')}`);
  }

  /**
   * One commit, idempotent: sent with the head as parentCommit, so a replay after a lost reply or a
   * concurrent commit is refused by the Hub (412/409) rather than applied twice; then the tree is re-read
   * and reconciled (a delete of a gone file and a put whose bytes are there count as done) and only what
   * is left is committed again. `ifMatch` is checked against each head before committing.
   */
  async commit(params: StoreCommitParams): Promise<void> {
    const accessToken = this.requireToken('committing');
    const signal = params.signal;
    for (const op of params.operations) assertSafeName(op.path);
    signal?.throwIfAborted();
    const ids = new Map<string, ContentId>();
    let pending = params.operations;
    for (let attempt = 0; ; attempt++) {
      signal?.throwIfAborted();
      const head = await this.headCommit(signal);
      if (attempt > 0) {
        pending = await this.notYetApplied(pending, ids);
        if (pending.length === 0) {
          this.#logger?.warn?.(`${this.description}: "${params.message}" had already landed (its reply was lost); nothing left to commit`);
          return;
        }
      }
      if (params.ifMatch) {
        const mine = params.operations.some((o) => o.kind === 'put' && o.path === params.ifMatch?.path);
        const landed = attempt > 0 && mine && !pending.some((o) => o.path === params.ifMatch?.path);
        if (!landed) await this.checkIfMatch(params.ifMatch, head);
      }
      try {
        await this.commitOnce(params, pending, head, accessToken, signal);
        return;
      } catch (err) {
        if (signal?.aborted || err instanceof HubAuthError || (err instanceof HubApiError && (err.statusCode === 401 || err.statusCode === 403))) {
          this.fail(`committing "${params.message}"`, err);
        }
        // A conflict (someone committed since `head`, or our own replayed commit landed), a 404 on a delete,
        // or a failure after the retries: re-read the tree before deciding.
        const left = await this.notYetApplied(pending, ids);
        if (left.length === 0) {
          this.#logger?.warn?.(`${this.description}: "${params.message}" is in the repo although the commit call failed (a lost reply); treated as done`);
          return;
        }
        const conflict = err instanceof HubApiError && (err.statusCode === 409 || err.statusCode === 412 || err.statusCode === 404);
        if (!conflict || attempt >= 4) this.fail(`committing "${params.message}"`, err);
        pending = left;
      }
    }
  }
}
