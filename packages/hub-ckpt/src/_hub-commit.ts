// HubStore's commit, made idempotent: parentCommit, then reconcile after a conflict or a lost reply.
import { FileBlob } from './_file-blob';
import {
  commitIter,
  downloadFile,
  HubApiError,
  pathsInfo,
  type CommitOperation,
  type RepoDesignation,
} from '@huggingface/hub';
import { CommitQuotaError, ConcurrentWriteError, HubAuthError, StoreError } from './errors';
import { contentId, holds, type ContentId, type RemoteEntry } from './_content-id';
import { describeWriter } from './_describe-writer';
import { sha256Hex } from './_fs';
import { assertSafeName, hubUrlPath } from './_paths';
import type { HubCkptLogger, StoreCommitParams, StoreOperation } from './types';

/** What the commit needs of its HubStore. */
export interface HubCommitContext {
  repo: RepoDesignation;
  repoType: 'model' | 'dataset';
  repoId: string;
  endpoint: string;
  description: string;
  accessToken: string;
  creds: { accessToken?: string };
  fetch: typeof fetch;
  useXet: boolean;
  logger: HubCkptLogger | undefined;
  /** Turns a failure into HubAuthError / StoreError (never returns). */
  fail: (what: string, err: unknown) => never;
}

/** The head commit of the main branch (what a commit's parentCommit must be). */
async function headCommit(h: HubCommitContext, signal: AbortSignal | undefined): Promise<string> {
  const url = `${h.endpoint}/api/${h.repoType}s/${h.repoId}`;
  let res: Response;
  try {
    res = await h.fetch(url, {
      headers: h.accessToken ? { Authorization: `Bearer ${h.accessToken}` } : {},
      ...(signal ? { signal } : {}),
    });
  } catch (err) {
    h.fail('reading the head commit', err);
  }
  if (!res.ok) {
    await res.body?.cancel().catch(() => undefined);
    h.fail(
      'reading the head commit',
      new HubApiError(
        url,
        res.status,
        res.headers.get('X-Request-Id') ?? undefined,
        `Api error with status ${res.status}`,
      ),
    );
  }
  const sha = ((await res.json()) as { sha?: unknown }).sha;
  if (typeof sha !== 'string' || sha === '')
    throw new StoreError(`reading the head commit of ${h.description}: the Hub sent no "sha"`, { url });
  return sha;
}

/** paths-info of `paths` (at `revision`), with the last commit of each when `expand`. */
async function remoteEntries(
  h: HubCommitContext,
  paths: string[],
  revision: string | undefined,
  expand: boolean,
): Promise<Map<string, RemoteEntry & { lastCommit?: { id: string; title: string } }>> {
  const out = new Map<string, RemoteEntry & { lastCommit?: { id: string; title: string } }>();
  if (paths.length === 0) return out;
  let infos: Awaited<ReturnType<typeof pathsInfo>>;
  try {
    infos = await pathsInfo({
      repo: h.repo,
      ...h.creds,
      hubUrl: h.endpoint,
      fetch: h.fetch,
      paths,
      expand,
      ...(revision ? { revision } : {}),
    });
  } catch (err) {
    if (err instanceof HubApiError && err.statusCode === 404) return out;
    h.fail('reading paths-info', err);
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

/**
 * The operations whose effect is not yet in the repo (a delete of a gone file and a put whose bytes are there are
 * done).
 */
async function notYetApplied(
  h: HubCommitContext,
  ops: StoreOperation[],
  ids: Map<string, ContentId>,
): Promise<StoreOperation[]> {
  const remote = await remoteEntries(h, [...new Set(ops.map((o) => o.path))], undefined, false);
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
async function checkIfMatch(
  h: HubCommitContext,
  cond: { path: string; sha256: string | null },
  head: string,
): Promise<void> {
  const remote = (await remoteEntries(h, [cond.path], head, true)).get(cond.path);
  let sha: string | null = null;
  let bytes: Uint8Array | null = null;
  if (remote !== undefined) {
    if (remote.lfsOid !== undefined) sha = remote.lfsOid;
    else {
      try {
        const blob = await downloadFile({
          repo: h.repo,
          path: hubUrlPath(cond.path),
          revision: head,
          ...h.creds,
          hubUrl: h.endpoint,
          fetch: h.fetch,
        });
        bytes = blob === null ? null : new Uint8Array(await blob.arrayBuffer());
      } catch (err) {
        h.fail(`downloading ${cond.path}`, err);
      }
      sha = bytes === null ? null : sha256Hex(bytes);
    }
  }
  if (sha === cond.sha256) return;
  const by = remote?.lastCommit ? `commit ${remote.lastCommit.id.slice(0, 12)} "${remote.lastCommit.title}", ` : '';
  throw new ConcurrentWriteError({ path: cond.path, writer: `${by}${describeWriter(bytes)}`, where: h.description });
}

async function commitOnce(
  h: HubCommitContext,
  params: StoreCommitParams,
  ops: StoreOperation[],
  parentCommit: string,
  signal: AbortSignal | undefined,
): Promise<void> {
  const operations: CommitOperation[] = [];
  for (const op of ops) {
    if (op.kind === 'delete') operations.push({ operation: 'delete', path: op.path });
    else if ('localPath' in op)
      operations.push({ operation: 'addOrUpdate', path: op.path, content: await FileBlob.open(op.localPath) });
    else operations.push({ operation: 'addOrUpdate', path: op.path, content: new Blob([op.bytes]) });
  }
  const failed: string[] = [];
  const it = commitIter({
    repo: h.repo,
    accessToken: h.accessToken,
    hubUrl: h.endpoint,
    fetch: h.fetch,
    title: params.message,
    operations,
    parentCommit,
    useXet: h.useXet,
    ...(signal ? { abortSignal: signal } : {}),
  });
  for (let r = await it.next(); !r.done; r = await it.next()) {
    const ev = r.value;
    if (ev.event === 'phase' && ev.phase === 'committing') await params.onProgress?.({ stage: 'commit' });
    else if (ev.event === 'fileProgress' && ev.state === 'uploading' && ev.progress === 1) {
      await params.onProgress?.({ stage: 'file', kind: 'put', path: ev.path });
    } else if (ev.event === 'fileProgress' && ev.state === 'error') failed.push(ev.path);
  }
  if (failed.length > 0)
    throw new StoreError(`committing "${params.message}" on ${h.description}: failed to upload ${failed.join(', ')}`);
}

/**
 * One commit, idempotent: sent with the head as parentCommit, so a replay after a lost reply or a
 * concurrent commit is refused by the Hub (412/409) rather than applied twice; then the tree is re-read
 * and reconciled (a delete of a gone file and a put whose bytes are there count as done) and only what
 * is left is committed again. `ifMatch` is checked against each head before committing.
 */
export async function commitIdempotent(h: HubCommitContext, params: StoreCommitParams): Promise<void> {
  const signal = params.signal;
  for (const op of params.operations) assertSafeName(op.path);
  signal?.throwIfAborted();
  const ids = new Map<string, ContentId>();
  let pending = params.operations;
  for (let attempt = 0; ; attempt++) {
    signal?.throwIfAborted();
    const head = await headCommit(h, signal);
    if (attempt > 0) {
      pending = await notYetApplied(h, pending, ids);
      if (pending.length === 0) {
        h.logger?.warn?.(
          `${h.description}: "${params.message}" had already landed (its reply was lost); nothing left to commit`,
        );
        return;
      }
    }
    let headMoved = false;
    for (const cond of [params.ifMatch ?? []].flat()) {
      const mine = params.operations.some((o) => o.kind === 'put' && o.path === cond.path);
      const landed = attempt > 0 && mine && !pending.some((o) => o.path === cond.path);
      if (landed) continue;
      try {
        await checkIfMatch(h, cond, head);
      } catch (err) {
        // The revision read a moment ago is gone (another commit, or a squash, replaced it): read the head again.
        if (err instanceof StoreError && err.status === 404 && attempt < 4) {
          headMoved = true;
          break;
        }
        throw err;
      }
    }
    if (headMoved) continue;
    try {
      await commitOnce(h, params, pending, head, signal);
      return;
    } catch (err) {
      // Over the hourly commit quota: nothing landed, and a retry now would be refused again.
      if (err instanceof CommitQuotaError) throw err;
      if (
        signal?.aborted ||
        err instanceof HubAuthError ||
        (err instanceof HubApiError && (err.statusCode === 401 || err.statusCode === 403))
      ) {
        h.fail(`committing "${params.message}"`, err);
      }
      // A conflict (someone committed since `head`, or our own replayed commit landed), a 404 on a delete,
      // or a failure after the retries: re-read the tree before deciding.
      let left: StoreOperation[];
      try {
        left = await notYetApplied(h, pending, ids);
      } catch {
        // the tree cannot be read either: report the commit's own failure
        h.fail(`committing "${params.message}"`, err);
      }
      if (left.length === 0) {
        h.logger?.warn?.(
          `${h.description}: "${params.message}" is in the repo although the commit call failed (a lost reply); ` +
            `treated as done`,
        );
        return;
      }
      const conflict =
        err instanceof HubApiError && (err.statusCode === 409 || err.statusCode === 412 || err.statusCode === 404);
      if (!conflict || attempt >= 4) h.fail(`committing "${params.message}"`, err);
      pending = left;
    }
  }
}
