// A local Hub-protocol server: a real HTTP server on 127.0.0.1 that implements the calls the
// @huggingface/hub client makes for repos, commits (preupload, LFS batch + basic PUT, NDJSON
// commit), tree listings with paging, paths-info and resolve/raw downloads with Range and ETag.
// Blobs live on disk. Fault switches make it answer like a bad day on the real Hub.
// It imports nothing from vitest, so benches and child processes can start it too.
import { createHash, randomBytes } from 'node:crypto';
import {
  createReadStream,
  createWriteStream,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  blobOf,
  storageBytes,
  gitBlobOid,
  HubServerState,
  lfsPointerText,
  newCommitOid,
  type HubFileRecord,
  type HubRepoRecord,
  type HubRepoType,
} from './hub-server-state';

export type { HubRepoType } from './hub-server-state';

/** Fault switches. Counted faults apply to the next `count` matching requests, then switch off. */
export interface HubServerFaults {
  /** Answer the next `count` commit POSTs with 429, with `Retry-After: retryAfterS` when set. */
  commit429?: { count: number; retryAfterS?: number };
  /** Answer the next `count` commit POSTs with 500. */
  commit500?: { count: number };
  /** Answer the next `count` LFS batch POSTs with 503. */
  batch503?: { count: number };
  /** Destroy the connection half-way through the body of the next `count` LFS PUTs. */
  dropPut?: { count: number };
  /**
   * Lose the second half of the next `count` LFS PUT bodies in transit. As the real LFS storage does,
   * the server then refuses the upload (the bytes do not hash to the declared oid and size) and stores nothing.
   */
  truncatePut?: { count: number };
  /**
   * Apply the next `count` commit POSTs, then fail their reply: `drop` destroys the connection before
   * any answer, `500` answers 500 (a proxy timing out after the Hub applied the commit). @default drop
   */
  commitLostReply?: {
    count: number;
    as?: 'drop' | 500 /** Let this many commits through first. @default 0 */;
    skip?: number;
  };
  /** Flip one byte of the next `count` LFS PUT bodies in transit (size unchanged): the upload is refused as for truncatePut. */
  corruptPut?: { count: number };
  /**
   * Serve one flipped byte in the next `count` resolve/raw bodies longer than one byte
   * (optionally only for paths containing `pathIncludes`). The size stays right.
   */
  wrongBytes?: { count: number; pathIncludes?: string };
  /** Answer every Hub call (not LFS storage PUTs) with 401, as for an expired token. */
  unauthorized?: boolean;
  /** Answer every write with 403, as for a read-only token. */
  forbidden?: boolean;
  /**
   * An outage: until this wall-clock time (ms since the epoch), every Hub call except the admin route
   * fails (`drop`: the connection is destroyed with no answer; `503`: Service Unavailable). @default none
   */
  outageUntilMs?: number;
  /** How the outage fails requests. @default 503 */
  outageAs?: 'drop' | 503;
  /** Start an outage of `durationMs` right after the next `afterCommits` commits were answered (sets outageUntilMs then). */
  outageAfter?: { afterCommits: number; durationMs: number };
}

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
  /** Bytes reachable from any commit of the repo's history (what the Hub bills), or undefined when it does not exist. */
  storageBytes(repoId: string, type?: HubRepoType): number | undefined;
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

const LFS_EXTENSIONS =
  /\.(safetensors|bin|pt|pth|ckpt|h5|onnx|msgpack|npy|npz|pkl|pickle|gz|zip|tar|zst|xz|parquet|arrow|model|gguf)$/i;
const TYPES: Record<string, HubRepoType> = { models: 'model', datasets: 'dataset', spaces: 'space' };

/** Starts the server on 127.0.0.1 on a free port. */
export async function startHubServer(opts: StartHubServerOptions = {}): Promise<HubServer> {
  const ownDir = opts.dir === undefined;
  const dir = opts.dir ?? realpathSync(mkdtempSync(join(tmpdir(), 'soup-hub-')));
  const token = opts.token ?? `hf_test_${randomBytes(12).toString('hex')}`;
  if (!token.startsWith('hf_'))
    throw new TypeError('startHubServer: token must start with "hf_" (the client refuses others)');
  const state = new HubServerState(dir);
  const pageSize = opts.treePageSize ?? 1000;
  const lfsThreshold = opts.lfsThresholdBytes ?? 10 * 1024 * 1024;
  let faults: HubServerFaults = structuredClone(opts.faults ?? {});
  const requests: HubServerRequest[] = [];
  const errors: Error[] = [];
  const commits = new Map<string, number>();
  const squashes = new Map<string, number>();
  let requestCounter = 0;

  const take = (
    name: 'commit429' | 'commit500' | 'batch503' | 'dropPut' | 'truncatePut' | 'commitLostReply' | 'corruptPut',
  ): boolean => {
    const f = faults[name];
    if (!f || f.count <= 0) return false;
    f.count -= 1;
    return true;
  };

  const server: Server = createServer((req, res) => {
    const id = `req-${++requestCounter}`;
    res.setHeader('X-Request-Id', id);
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    res.on('finish', () => requests.push({ method: req.method ?? 'GET', path, status: res.statusCode }));
    handle(req, res).catch((err: unknown) => {
      const e = err instanceof Error ? err : new Error(String(err));
      errors.push(e);
      if (!res.headersSent) sendError(res, 500, `internal test-server error: ${e.message}`);
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const base = `http://${req.headers.host ?? '127.0.0.1'}`;
    const parts = url.pathname
      .split('/')
      .slice(1)
      .map((p) => decodeURIComponent(p));
    const method = req.method ?? 'GET';

    if (parts[0] === '__lfs' && parts[1] && method === 'PUT') return handlePut(req, res, parts[1]);
    if (parts[0] === '__admin' && parts[1] === 'faults') {
      if (req.headers.authorization !== `Bearer ${token}`)
        return sendError(res, 401, 'Invalid credentials in Authorization header');
      if (method === 'POST') faults = JSON.parse((await readBody(req)).toString('utf8') || '{}') as HubServerFaults;
      return sendJson(res, 200, faults);
    }

    if (faults.outageUntilMs !== undefined && Date.now() < faults.outageUntilMs) {
      if (faults.outageAs === 'drop') {
        req.socket.destroy();
        return;
      }
      await readBody(req);
      return sendError(res, 503, 'Service Unavailable (injected outage)');
    }

    const auth = checkAuth(req);
    if (faults.unauthorized || auth === 'invalid') {
      await readBody(req);
      return sendError(res, 401, 'Invalid credentials in Authorization header');
    }

    if (parts[0] === 'api') {
      if (parts[1] === 'whoami-v2' && method === 'GET') {
        if (auth !== 'ok') return sendError(res, 401, 'Invalid credentials in Authorization header');
        return sendJson(res, 200, {
          type: 'user',
          id: 'soup-test-user',
          name: 'soup-test',
          fullname: 'Soup Test',
          email: 'soup-test@example.invalid',
          emailVerified: true,
          isPro: false,
          orgs: [],
          auth: {
            type: 'access_token',
            accessToken: { displayName: 'soup-test', role: 'write', createdAt: new Date(0).toISOString() },
          },
        });
      }
      if (parts[1] === 'repos' && parts[2] === 'create' && method === 'POST') return handleCreate(req, res, auth, base);
      if (parts[1] === 'repos' && parts[2] === 'delete' && method === 'DELETE') return handleDelete(req, res, auth);
      const type = TYPES[parts[1] ?? ''];
      if (type && parts[2] && parts[3]) {
        const repoId = `${parts[2]}/${parts[3]}`;
        const rest = parts.slice(4);
        const repo = state.get(type, repoId);
        if (rest.length === 0 && method === 'GET') {
          if (!repo || !canRead(repo, auth)) return sendRepoNotFound(res, auth);
          // As on the Hub, `expand[]=usedStorage` answers only the fields asked for.
          const expand = url.searchParams.getAll('expand[]').concat(url.searchParams.getAll('expand'));
          if (expand.length > 0) {
            const out: Record<string, unknown> = { _id: repoId, id: repoId };
            for (const f of expand) {
              if (f === 'usedStorage') out.usedStorage = storageBytes(repo);
              else if (f === 'private') out.private = repo.private;
              else if (f === 'sha') out.sha = repo.head;
              else return sendError(res, 400, `"expand" must be one of the known fields, got ${JSON.stringify(f)}`);
            }
            return sendJson(res, 200, out);
          }
          return sendJson(res, 200, {
            _id: repoId,
            id: repoId,
            private: repo.private,
            sha: repo.head,
            createdAt: repo.createdAt,
            likes: 0,
          });
        }
        const op = rest[0];
        if (op === 'super-squash' && method === 'POST') return handleSquash(req, res, repo, auth, rest[1]);
        if (op === 'preupload' && method === 'POST') return handlePreupload(req, res, repo, auth, rest[1]);
        if (op === 'commit' && method === 'POST') return handleCommit(req, res, repo, auth, rest[1], base);
        if (op === 'paths-info' && method === 'POST') return handlePathsInfo(req, res, repo, auth, rest[1]);
        if (op === 'tree' && method === 'GET')
          return handleTree(res, url, base, repo, auth, rest[1], rest.slice(2).join('/'));
      }
      return sendError(res, 404, `no such API route: ${method} ${url.pathname}`);
    }

    // Repo routes: [datasets/|spaces/]ns/name(.git/info/lfs/objects/batch | /resolve/rev/path | /raw/rev/path)
    let type: HubRepoType = 'model';
    let rest = parts;
    if (parts[0] === 'datasets' || parts[0] === 'spaces') {
      type = parts[0] === 'datasets' ? 'dataset' : 'space';
      rest = parts.slice(1);
    }
    const [ns, nameRaw] = rest;
    if (ns && nameRaw) {
      if (nameRaw.endsWith('.git') && rest.slice(2).join('/') === 'info/lfs/objects/batch' && method === 'POST') {
        return handleBatch(req, res, state.get(type, `${ns}/${nameRaw.slice(0, -4)}`), auth, base);
      }
      const kind = rest[2];
      if ((kind === 'resolve' || kind === 'raw') && (method === 'GET' || method === 'HEAD') && rest[3]) {
        return handleResolve(
          req,
          res,
          state.get(type, `${ns}/${nameRaw}`),
          auth,
          rest[3],
          rest.slice(4).join('/'),
          kind,
        );
      }
    }
    return sendError(res, 404, `no such route: ${method} ${url.pathname}`);
  }

  function checkAuth(req: IncomingMessage): 'ok' | 'anonymous' | 'invalid' {
    const header = req.headers.authorization;
    if (header === undefined) return 'anonymous';
    return header === `Bearer ${token}` ? 'ok' : 'invalid';
  }

  function canRead(repo: HubRepoRecord, auth: string): boolean {
    return !repo.private || auth === 'ok';
  }

  function sendRepoNotFound(res: ServerResponse, auth: string): void {
    // Like the Hub: an anonymous caller cannot tell a private repo from a missing one, and gets a 401.
    sendError(res, auth === 'ok' ? 404 : 401, 'Repository not found', 'RepoNotFound');
  }

  /** Write gate: returns true when the request may write, after answering otherwise. */
  function writeGate(res: ServerResponse, auth: string): boolean {
    if (auth !== 'ok') {
      sendError(res, 401, 'You must be authenticated to access this resource');
      return false;
    }
    if (faults.forbidden) {
      sendError(res, 403, 'You do not have write access to this repository (read-only token)');
      return false;
    }
    return true;
  }

  function checkRev(res: ServerResponse, repo: HubRepoRecord, rev: string | undefined): boolean {
    if (rev === 'main' || rev === repo.head) return true;
    sendError(res, 404, `Revision not found: ${rev ?? ''}`, 'RevisionNotFound');
    return false;
  }

  async function handleCreate(req: IncomingMessage, res: ServerResponse, auth: string, base: string): Promise<void> {
    const body = JSON.parse((await readBody(req)).toString('utf8') || '{}') as {
      name?: string;
      organization?: string;
      type?: HubRepoType;
      visibility?: string;
      private?: boolean;
    };
    if (!writeGate(res, auth)) return;
    const type = body.type ?? 'model';
    if (!body.name || !/^[\w.-]+$/.test(body.name) || (body.organization && !/^[\w.-]+$/.test(body.organization))) {
      return sendError(res, 400, 'Invalid repo name');
    }
    const id = `${body.organization ?? 'soup-test'}/${body.name}`;
    const prefix = type === 'model' ? '' : `${type}s/`;
    if (state.get(type, id)) {
      return sendJson(res, 409, { error: `You already created this ${type} repo`, url: `${base}/${prefix}${id}` });
    }
    state.create(type, id, body.visibility === 'private' || body.private === true);
    sendJson(res, 200, { url: `${base}/${prefix}${id}`, name: id, id: randomBytes(12).toString('hex') });
  }

  async function handleDelete(req: IncomingMessage, res: ServerResponse, auth: string): Promise<void> {
    const body = JSON.parse((await readBody(req)).toString('utf8') || '{}') as {
      name?: string;
      organization?: string;
      type?: HubRepoType;
    };
    if (!writeGate(res, auth)) return;
    const id = `${body.organization ?? 'soup-test'}/${body.name ?? ''}`;
    if (!state.delete(body.type ?? 'model', id)) return sendError(res, 404, 'Repository not found', 'RepoNotFound');
    sendJson(res, 200, {});
  }

  async function handlePreupload(
    req: IncomingMessage,
    res: ServerResponse,
    repo: HubRepoRecord | undefined,
    auth: string,
    rev: string | undefined,
  ): Promise<void> {
    const body = JSON.parse((await readBody(req)).toString('utf8')) as {
      files?: Array<{ path: string; size: number; sample: string }>;
    };
    if (!repo || !canRead(repo, auth)) return sendRepoNotFound(res, auth);
    if (!writeGate(res, auth) || !checkRev(res, repo, rev)) return;
    const files = (body.files ?? []).map((f) => {
      const sample = Buffer.from(f.sample ?? '', 'base64');
      const lfs = f.size >= lfsThreshold || LFS_EXTENSIONS.test(f.path) || sample.includes(0);
      return { path: f.path, uploadMode: lfs ? 'lfs' : 'regular', shouldIgnore: false };
    });
    sendJson(res, 200, { files, commitOid: repo.head });
  }

  async function handleBatch(
    req: IncomingMessage,
    res: ServerResponse,
    repo: HubRepoRecord | undefined,
    auth: string,
    base: string,
  ): Promise<void> {
    const body = JSON.parse((await readBody(req)).toString('utf8')) as {
      operation?: string;
      transfers?: string[];
      objects?: Array<{ oid: string; size: number }>;
    };
    if (!repo || !canRead(repo, auth)) return sendRepoNotFound(res, auth);
    if (!writeGate(res, auth)) return;
    if (take('batch503')) return sendError(res, 503, 'Service temporarily unavailable (injected fault)');
    if (body.operation !== 'upload') return sendError(res, 422, 'only the upload operation is implemented');
    if (!(body.transfers ?? ['basic']).includes('basic'))
      return sendError(res, 422, 'the basic transfer must be offered');
    const objects = (body.objects ?? []).map((o) => {
      if (!/^[0-9a-f]{64}$/.test(o.oid) || !Number.isInteger(o.size) || o.size < 0) {
        return { oid: o.oid, size: o.size, error: { code: 422, message: 'invalid oid or size' } };
      }
      const have = state.lfsMeta(o.oid);
      if (have && have.sha256 === o.oid && have.sizeBytes === o.size)
        return { oid: o.oid, size: o.size, authenticated: true };
      return {
        oid: o.oid,
        size: o.size,
        authenticated: true,
        actions: { upload: { href: `${base}/__lfs/${o.oid}?size=${o.size}`, expires_in: 3600 } },
      };
    });
    send(res, 200, JSON.stringify({ transfer: 'basic', objects }), { 'Content-Type': 'application/vnd.git-lfs+json' });
  }

  async function handlePut(req: IncomingMessage, res: ServerResponse, oid: string): Promise<void> {
    if (!/^[0-9a-f]{64}$/.test(oid)) {
      await readBody(req);
      return sendError(res, 400, 'bad oid');
    }
    const expected = Number(req.headers['content-length'] ?? Number.NaN);
    const half = Number.isFinite(expected) ? Math.floor(expected / 2) : 0;
    const drop = take('dropPut');
    const truncate = !drop && take('truncatePut');
    let flip = !drop && !truncate && take('corruptPut');
    const tmp = state.tmpPath();
    const hash = createHash('sha256');
    let received = 0;
    let written = 0;
    const gate = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        if (drop && received + chunk.length >= half) {
          req.socket.destroy();
          cb(new Error('connection dropped (injected fault)'));
          return;
        }
        received += chunk.length;
        let piece = chunk;
        if (truncate) piece = chunk.subarray(0, Math.max(0, Math.min(chunk.length, half - written)));
        if (flip && piece.length > 0) {
          piece = Buffer.from(piece);
          piece[0] = (piece[0] ?? 0) ^ 0xff;
          flip = false;
        }
        written += piece.length;
        hash.update(piece);
        cb(null, piece);
      },
    });
    try {
      await pipeline(req, gate, createWriteStream(tmp));
    } catch {
      rmSync(tmp, { force: true });
      const socket = req.socket as typeof req.socket | null;
      if (!res.headersSent && !res.destroyed && socket !== null && !socket.destroyed)
        sendError(res, 400, 'upload interrupted');
      return;
    }
    const sha256 = hash.digest('hex');
    // Real LFS storage checks what arrived against the declared oid and size, and keeps nothing else.
    const declared = Number(new URL(req.url ?? '/', 'http://127.0.0.1').searchParams.get('size'));
    if (sha256 !== oid || (Number.isFinite(declared) && written !== declared)) {
      rmSync(tmp, { force: true });
      return sendError(
        res,
        400,
        `the uploaded bytes (${written} bytes, sha256 ${sha256}) do not match the declared oid ${oid} and size ${declared}`,
      );
    }
    state.commitLfsObject(oid, tmp, { sizeBytes: written, sha256 });
    send(res, 200, '', { ETag: `"${createHash('md5').update(sha256).digest('hex')}"` });
  }

  async function handleCommit(
    req: IncomingMessage,
    res: ServerResponse,
    repo: HubRepoRecord | undefined,
    auth: string,
    rev: string | undefined,
    base: string,
  ): Promise<void> {
    const raw = (await readBody(req)).toString('utf8');
    if (!repo || !canRead(repo, auth)) return sendRepoNotFound(res, auth);
    if (!writeGate(res, auth) || !checkRev(res, repo, rev)) return;
    if (take('commit429')) {
      const after = faults.commit429?.retryAfterS;
      return sendError(
        res,
        429,
        'Too many requests (injected fault)',
        undefined,
        after === undefined ? {} : { 'Retry-After': String(after) },
      );
    }
    if (take('commit500')) return sendError(res, 500, 'Internal Error (injected fault)');
    let lines: Array<{ key: string; value: Record<string, unknown> }>;
    try {
      lines = raw
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as { key: string; value: Record<string, unknown> });
    } catch {
      return sendError(res, 400, 'commit body is not NDJSON');
    }
    const header = lines[0];
    if (header?.key !== 'header' || typeof header.value.summary !== 'string' || header.value.summary === '') {
      return sendError(res, 400, 'the first NDJSON line must be the header with a summary');
    }
    if (typeof header.value.parentCommit === 'string' && header.value.parentCommit !== repo.head) {
      return sendError(res, 412, 'A commit has happened since. Please refresh and try again.');
    }
    const commitId = newCommitOid();
    const lastCommit = { id: commitId, title: header.value.summary, date: new Date().toISOString() };
    const files: Record<string, HubFileRecord> = { ...repo.files };
    for (const { key, value } of lines.slice(1)) {
      const path = String(value.path ?? '');
      if (!isSafeRepoPath(path)) return sendError(res, 400, `invalid path in commit: ${JSON.stringify(path)}`);
      if (key === 'file') {
        const content = Buffer.from(String(value.content ?? ''), value.encoding === 'base64' ? 'base64' : 'utf8');
        const sha256 = state.putObject(content);
        files[path] = { size: content.length, gitOid: gitBlobOid(content), sha256, lastCommit };
      } else if (key === 'lfsFile') {
        const oid = String(value.oid ?? '');
        const size = Number(value.size);
        const meta = state.lfsMeta(oid);
        if (!meta || meta.sha256 !== oid || meta.sizeBytes !== size) {
          return sendError(
            res,
            422,
            `Your push was rejected because an LFS pointer pointed to a file that does not exist. Offending file: - ${path}`,
          );
        }
        files[path] = {
          size,
          gitOid: gitBlobOid(Buffer.from(lfsPointerText(oid, size))),
          lfs: { oid, size },
          lastCommit,
        };
      } else if (key === 'deletedFile') {
        if (!files[path]) return sendError(res, 404, `Entry not found: ${path}`, 'EntryNotFound');
        delete files[path];
      } else if (key === 'deletedFolder') {
        for (const p of Object.keys(files)) if (p.startsWith(`${path}/`)) delete files[p];
      } else {
        return sendError(res, 400, `unknown commit operation ${JSON.stringify(key)}`);
      }
    }
    // Every blob of the parent commit stays reachable from history.
    const history: Record<string, number> = { ...repo.history };
    for (const f of Object.values(repo.files)) {
      const [id, size] = blobOf(f);
      history[id] = size;
    }
    const next: HubRepoRecord = { ...repo, files, head: commitId, commitCount: repo.commitCount + 1, history };
    state.save(next);
    const k = `${repo.type}:${repo.id}`;
    commits.set(k, (commits.get(k) ?? 0) + 1);
    const prefix = repo.type === 'model' ? '' : `${repo.type}s/`;
    const after = faults.outageAfter;
    if (after && after.afterCommits > 0) {
      after.afterCommits -= 1;
      if (after.afterCommits === 0) {
        faults.outageUntilMs = Date.now() + after.durationMs;
        delete faults.outageAfter;
      }
    }
    const lost = faults.commitLostReply;
    if (lost && lost.count > 0 && (lost.skip ?? 0) > 0) lost.skip = (lost.skip ?? 0) - 1;
    else if (take('commitLostReply')) {
      if ((faults.commitLostReply?.as ?? 'drop') === 'drop') {
        req.socket.destroy();
        return;
      }
      return sendError(res, 500, 'Internal Error after the commit was applied (injected fault)');
    }
    sendJson(res, 200, {
      success: true,
      commitOid: commitId,
      commitUrl: `${base}/${prefix}${repo.id}/commit/${commitId}`,
      hookOutput: '',
    });
  }

  /** `POST /api/{type}s/{id}/super-squash/{branch}` (huggingface_hub's super_squash_history): history becomes one commit. */
  async function handleSquash(
    req: IncomingMessage,
    res: ServerResponse,
    repo: HubRepoRecord | undefined,
    auth: string,
    rev: string | undefined,
  ): Promise<void> {
    const raw = (await readBody(req)).toString('utf8');
    if (!repo || !canRead(repo, auth)) return sendRepoNotFound(res, auth);
    if (!writeGate(res, auth)) return;
    if (rev !== 'main') return sendError(res, 404, `Invalid rev id: ${rev ?? ''}`, 'RevisionNotFound');
    let message = "Super-squash branch 'main' using huggingface_hub";
    if (raw.trim() !== '') {
      try {
        const body = JSON.parse(raw) as { message?: unknown };
        if (body.message !== undefined) {
          if (typeof body.message !== 'string' || body.message === '')
            return sendError(res, 400, '"message" must be a non-empty string');
          message = body.message;
        }
      } catch {
        return sendError(res, 400, 'body is not JSON');
      }
    }
    const commitId = newCommitOid();
    const date = new Date().toISOString();
    const files: Record<string, HubFileRecord> = {};
    for (const [p, f] of Object.entries(repo.files))
      files[p] = { ...f, lastCommit: { id: commitId, title: message, date } };
    // One commit left: only the blobs of the current tree stay reachable.
    state.save({ ...repo, files, head: commitId, commitCount: 1, history: {} });
    const k = `${repo.type}:${repo.id}`;
    squashes.set(k, (squashes.get(k) ?? 0) + 1);
    sendJson(res, 200, { commitId });
  }

  function entryFor(repo: HubRepoRecord, path: string, expand: boolean): Record<string, unknown> | undefined {
    const file = repo.files[path];
    if (file) {
      const out: Record<string, unknown> = { type: 'file', oid: file.gitOid, size: file.size, path };
      if (file.lfs) {
        // As on the real Hub, the listing shows the size the LFS pointer declares (storage checked it on upload).
        out.size = file.lfs.size;
        out.lfs = {
          oid: file.lfs.oid,
          size: file.lfs.size,
          pointerSize: lfsPointerText(file.lfs.oid, file.lfs.size).length,
        };
      }
      if (expand) out.lastCommit = file.lastCommit;
      return out;
    }
    const isDir = Object.keys(repo.files).some((p) => p.startsWith(`${path}/`));
    if (isDir)
      return { type: 'directory', oid: createHash('sha1').update(`${repo.head}:${path}`).digest('hex'), size: 0, path };
    return undefined;
  }

  function handleTree(
    res: ServerResponse,
    url: URL,
    base: string,
    repo: HubRepoRecord | undefined,
    auth: string,
    rev: string | undefined,
    path: string,
  ): void {
    if (!repo || !canRead(repo, auth)) return sendRepoNotFound(res, auth);
    if (!checkRev(res, repo, rev)) return;
    const recursive = url.searchParams.get('recursive') === 'true' || url.searchParams.get('recursive') === '1';
    const expand = url.searchParams.get('expand') === 'true' || url.searchParams.get('expand') === '1';
    const prefix = path === '' ? '' : `${path.replace(/\/+$/, '')}/`;
    if (prefix !== '' && repo.files[path])
      return sendError(res, 404, `${path} is a file, not a folder`, 'EntryNotFound');
    const under = Object.keys(repo.files).filter((p) => p.startsWith(prefix));
    if (prefix !== '' && under.length === 0) return sendError(res, 404, `Entry not found: ${path}`, 'EntryNotFound');
    const paths = new Set<string>();
    for (const p of under) {
      const rel = p.slice(prefix.length).split('/');
      const depth = recursive ? rel.length : 1;
      for (let i = 1; i <= depth; i++) paths.add(prefix + rel.slice(0, i).join('/'));
    }
    const all = [...paths].sort();
    const offset = Number(Buffer.from(url.searchParams.get('cursor') ?? '', 'base64url').toString('utf8') || '0');
    const page = all.slice(offset, offset + pageSize).map((p) => entryFor(repo, p, expand));
    const headers: Record<string, string> = {};
    if (offset + pageSize < all.length) {
      const next = new URL(url.pathname, base);
      next.searchParams.set('recursive', String(recursive));
      next.searchParams.set('expand', String(expand));
      next.searchParams.set('cursor', Buffer.from(String(offset + pageSize)).toString('base64url'));
      headers.Link = `<${next.href}>; rel="next"`;
    }
    sendJson(res, 200, page, headers);
  }

  async function handlePathsInfo(
    req: IncomingMessage,
    res: ServerResponse,
    repo: HubRepoRecord | undefined,
    auth: string,
    rev: string | undefined,
  ): Promise<void> {
    const body = JSON.parse((await readBody(req)).toString('utf8') || '{}') as { paths?: string[]; expand?: boolean };
    if (!repo || !canRead(repo, auth)) return sendRepoNotFound(res, auth);
    if (!checkRev(res, repo, rev)) return;
    const out = (body.paths ?? [])
      .map((p) => entryFor(repo, p.replace(/\/+$/, ''), body.expand === true))
      .filter((e) => e !== undefined);
    sendJson(res, 200, out);
  }

  async function handleResolve(
    req: IncomingMessage,
    res: ServerResponse,
    repo: HubRepoRecord | undefined,
    auth: string,
    rev: string,
    path: string,
    kind: 'resolve' | 'raw',
  ): Promise<void> {
    if (!repo || !canRead(repo, auth)) return sendRepoNotFound(res, auth);
    if (!checkRev(res, repo, rev)) return;
    const file = repo.files[path];
    if (!file) return sendError(res, 404, `Entry not found: ${path}`, 'EntryNotFound');
    let body: { path: string; sizeBytes: number } | Buffer;
    let etag: string;
    const headers: Record<string, string> = {
      'Accept-Ranges': 'bytes',
      'Content-Type': 'application/octet-stream',
      'X-Repo-Commit': repo.head,
    };
    if (file.lfs && kind === 'raw') {
      body = Buffer.from(lfsPointerText(file.lfs.oid, file.lfs.size));
      etag = file.gitOid;
    } else {
      body = state.contentOf(file);
      etag = file.lfs ? file.lfs.oid : file.gitOid;
      if (file.lfs) {
        headers['X-Linked-Size'] = String(body.sizeBytes);
        headers['X-Linked-ETag'] = `"${etag}"`;
      }
    }
    headers.ETag = `"${etag}"`;
    const size = Buffer.isBuffer(body) ? body.length : body.sizeBytes;
    const range = parseRange(req.headers.range, size);
    if (range === 'invalid') {
      if (size === 0) {
        // An empty file: nothing to range over. Say so the way the client can read.
        return send(res, 200, '', { ...headers, 'Content-Range': 'bytes */0', 'Content-Length': '0' });
      }
      return send(res, 416, '', { ...headers, 'Content-Range': `bytes */${size}` });
    }
    const start = range?.start ?? 0;
    const end = range?.end ?? size - 1;
    const length = Math.max(0, end - start + 1);
    headers['Content-Length'] = String(length);
    if (range) headers['Content-Range'] = `bytes ${start}-${end}/${size}`;
    res.writeHead(range ? 206 : 200, headers);
    if (req.method === 'HEAD' || length === 0) {
      res.end();
      return;
    }
    let flip = false;
    const wb = faults.wrongBytes;
    if (wb && wb.count > 0 && length > 1 && (wb.pathIncludes === undefined || path.includes(wb.pathIncludes))) {
      wb.count -= 1;
      flip = true;
    }
    const source = Buffer.isBuffer(body)
      ? [body.subarray(start, end + 1)]
      : createReadStream(body.path, { start, end });
    const corrupt = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        if (flip) {
          const copy = Buffer.from(chunk);
          copy[0] = (copy[0] ?? 0) ^ 0xff;
          flip = false;
          cb(null, copy);
        } else cb(null, chunk);
      },
    });
    try {
      await pipeline(source, corrupt, res);
    } catch {
      res.destroy();
    }
  }

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
      faults = structuredClone(f);
    },
    getFaults(): HubServerFaults {
      return structuredClone(faults);
    },
    commitCount(repoId: string, type: HubRepoType = 'model'): number {
      return commits.get(`${type}:${repoId}`) ?? 0;
    },
    storageBytes(repoId: string, type: HubRepoType = 'model'): number | undefined {
      const repo = state.get(type, repoId);
      return repo ? storageBytes(repo) : undefined;
    },
    squashCount(repoId: string, type: HubRepoType = 'model'): number {
      return squashes.get(`${type}:${repoId}`) ?? 0;
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

function isSafeRepoPath(path: string): boolean {
  if (path === '' || path.startsWith('/') || path.includes('\\') || path.includes('\0')) return false;
  return path.split('/').every((seg) => seg !== '' && seg !== '.' && seg !== '..');
}

function parseRange(header: string | undefined, size: number): { start: number; end: number } | null | 'invalid' {
  if (header === undefined) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m) return null;
  let start: number;
  let end: number;
  if (m[1] === '') {
    const n = Number(m[2]);
    if (!Number.isFinite(n) || n === 0) return 'invalid';
    start = Math.max(0, size - n);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  }
  if (start >= size || start > end) return 'invalid';
  return { start, end };
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function send(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Length': String(Buffer.byteLength(body)), ...headers });
  res.end(body);
}

function sendJson(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  send(res, status, JSON.stringify(value), { 'Content-Type': 'application/json; charset=utf-8', ...headers });
}

function sendError(
  res: ServerResponse,
  status: number,
  message: string,
  errorCode?: string,
  headers: Record<string, string> = {},
): void {
  sendJson(
    res,
    status,
    { error: message },
    {
      'X-Error-Message': message.replace(/[^\x20-\x7e]/g, '?'),
      ...(errorCode ? { 'X-Error-Code': errorCode } : {}),
      ...headers,
    },
  );
}
