// A local Hub-protocol server: a real HTTP server on 127.0.0.1 that implements the calls the
// @huggingface/hub client makes for repos, commits (preupload, LFS batch + basic PUT or multipart
// parts, NDJSON commit), tree listings with paging, paths-info and resolve/raw downloads with Range and ETag.
// Blobs live on disk. Fault switches make it answer like a bad day on the real Hub.
// It imports nothing from vitest, so benches and child processes can start it too.
// One module per endpoint family (_hub-server-repos, -tree, -resolve, -commit, -squash, -lfs),
// routed by _hub-server-router; this file starts the server and hands out its handle.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HubServerContext } from './_hub-server-context';
import { sendError } from './_hub-server-http';
import { routeHubRequest } from './_hub-server-router';
import type { HubServerFaults } from './hub-server-faults';
import { type HubFileRecord, type HubRepoType, HubServerState, storageBytes } from './hub-server-state';

export type { HubRepoType } from './hub-server-state';
export type { HubServerFaults } from './hub-server-faults';

export interface HubServerRequest {
  method: string;
  /** URL path without the query. */
  path: string;
  status: number;
}

export interface StartHubServerOptions {
  /** Where repos and blobs are stored; reusing a dir restores its repos. @default a fresh temp dir, removed on close */
  dir?: string;
  /** The one valid token (must start with `hf_`, as the client checks). @default `hf_test_<random>` */
  token?: string;
  /** Fault switches active from the start. @default none */
  faults?: HubServerFaults;
  /** Entries per tree-listing page before a `Link: rel="next"` header. @default 1000 */
  treePageSize?: number;
  /** Files at least this large are LFS (as are binary samples and usual weight extensions). @default 10485760 */
  lfsThresholdBytes?: number;
  /**
   * LFS objects larger than this are offered the multipart transfer (when the client offers it) in parts of
   * this many bytes, the batch reply's `chunk_size`. @default undefined (the basic transfer only)
   */
  lfsMultipartChunkBytes?: number;
  /** The server's clock: the hour of the `commitQuota` fault. @default Date.now */
  now?: () => number;
}

export interface HubServer {
  /** Base URL, e.g. `http://127.0.0.1:41234`: pass it as the Hub endpoint. */
  url: string;
  /** The valid token. */
  token: string;
  /** The storage directory. */
  dir: string;
  /** Every request answered so far, in order. */
  requests: HubServerRequest[];
  /** Internal errors of the server itself (should stay empty). */
  errors: Error[];
  /** Replaces every fault switch. */
  setFaults(faults: HubServerFaults): void;
  /** The switches now in force (counts left). */
  getFaults(): HubServerFaults;
  /** Number of commits (NDJSON commit POSTs answered 200) made to a repo, creation excluded. */
  commitCount(repoId: string, type?: HubRepoType): number;
  /**
   * Bytes reachable from any commit of the repo's history (what the Hub bills), or undefined when it does not exist.
   */
  storageBytes(repoId: string, type?: HubRepoType): number | undefined;
  /** When each commit of a repo was answered (NDJSON commits, creation excluded), by the server's clock (`now`). */
  commitTimes(repoId: string, type?: HubRepoType): number[];
  /** Super-squash calls answered 200 for a repo. */
  squashCount(repoId: string, type?: HubRepoType): number;
  /** The current file tree of a repo (path -> record), or undefined when it does not exist. */
  files(repoId: string, type?: HubRepoType): Record<string, HubFileRecord> | undefined;
  /**
   * Corruption at rest: flips one byte of the stored bytes of `path` (its LFS object or its regular
   * blob) without touching the tree, as a failing disk would. Listings and sizes stay as they were.
   */
  corruptAtRest(repoId: string, path: string, type?: HubRepoType): void;
  close(): Promise<void>;
}

/** Starts the server on 127.0.0.1 on a free port. */
export async function startHubServer(opts: StartHubServerOptions = {}): Promise<HubServer> {
  const ownDir = opts.dir === undefined;
  const dir = opts.dir ?? realpathSync(mkdtempSync(join(tmpdir(), 'soup-hub-')));
  const token = opts.token ?? `hf_test_${randomBytes(12).toString('hex')}`;
  if (!token.startsWith('hf_'))
    throw new TypeError('startHubServer: token must start with "hf_" (the client refuses others)');
  const state = new HubServerState(dir);
  const ctx = new HubServerContext(
    state,
    token,
    opts.treePageSize ?? 1000,
    opts.lfsThresholdBytes ?? 10 * 1024 * 1024,
    structuredClone(opts.faults ?? {}),
    opts.lfsMultipartChunkBytes,
    opts.now ?? Date.now,
  );
  const requests: HubServerRequest[] = [];
  const errors: Error[] = [];
  let requestCounter = 0;

  const server: Server = createServer((req, res) => {
    const id = `req-${++requestCounter}`;
    res.setHeader('X-Request-Id', id);
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    res.on('finish', () => requests.push({ method: req.method ?? 'GET', path, status: res.statusCode }));
    routeHubRequest(ctx, req, res).catch((err: unknown) => {
      const e = err instanceof Error ? err : new Error(String(err));
      errors.push(e);
      if (!res.headersSent) sendError(res, 500, `internal test-server error: ${e.message}`);
      else res.destroy();
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('hub test server: no TCP address');
  let closed = false;

  return {
    url: `http://127.0.0.1:${address.port}`,
    token,
    dir,
    requests,
    errors,
    setFaults(f: HubServerFaults): void {
      ctx.faults = structuredClone(f);
    },
    getFaults(): HubServerFaults {
      return structuredClone(ctx.faults);
    },
    commitCount(repoId: string, type: HubRepoType = 'model'): number {
      return ctx.commits.get(`${type}:${repoId}`) ?? 0;
    },
    storageBytes(repoId: string, type: HubRepoType = 'model'): number | undefined {
      const repo = state.get(type, repoId);
      return repo ? storageBytes(repo) : undefined;
    },
    commitTimes(repoId: string, type: HubRepoType = 'model'): number[] {
      return [...(ctx.commitTimes.get(`${type}:${repoId}`) ?? [])];
    },
    squashCount(repoId: string, type: HubRepoType = 'model'): number {
      return ctx.squashes.get(`${type}:${repoId}`) ?? 0;
    },
    files(repoId: string, type: HubRepoType = 'model'): Record<string, HubFileRecord> | undefined {
      const repo = state.get(type, repoId);
      return repo ? structuredClone(repo.files) : undefined;
    },
    corruptAtRest(repoId: string, path: string, type: HubRepoType = 'model'): void {
      const file = state.get(type, repoId)?.files[path];
      if (!file) throw new Error(`corruptAtRest: ${repoId} has no file ${path}`);
      const where = state.contentOf(file).path;
      const bytes = readFileSync(where);
      if (bytes.length === 0) throw new Error(`corruptAtRest: ${path} is empty`);
      const at = Math.min(100, bytes.length - 1);
      bytes[at] = (bytes[at] ?? 0) ^ 0xff;
      writeFileSync(where, bytes);
    },
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      if (ownDir) rmSync(dir, { recursive: true, force: true });
    },
  };
}
