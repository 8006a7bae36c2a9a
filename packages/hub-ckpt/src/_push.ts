import { readdir, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { buildManifest } from './build-manifest';
import { holdsExactly } from './_holds-exactly';
import {
  ConcurrentWriteError,
  FolderConflictError,
  InvalidCheckpointOptionError,
  PointedCheckpointConflictError,
  PointerRegressionError,
  StaleRunError,
  VerifyError,
} from './errors';
import { sha256Hex } from './_fs';
import { MANIFEST_NAME, POINTER_PATH, stepOfLocalName } from './_layout';
import { readPointer } from './_pointer';
import type { CheckpointStore, HubCkptLogger, LocalStaging, StoreOperation } from './types';
import type { StoreLease } from './store-lease';
import { verifyCheckpoint } from './verify-checkpoint';
import { movePointer } from './_move-pointer';
import { readLedger, recordVerified, storeIdentity, VERIFIED_LEDGER, verifiedTo } from './_verified-ledger';

/** Where a push is. `upload` and `prune` fire once per file or folder; the others once. */
export type PushPhase = 'hash' | 'upload' | 'uploaded' | 'verified' | 'pointer' | 'pointed' | 'prune' | 'done';

export interface PushPhaseEvent {
  phase: PushPhase;
  step: number;
  /** The folder being pushed, e.g. `ckpt/checkpoint-120`. */
  pathInRepo: string;
  /** For `upload`: the repo path that landed; for `prune`: the repo path or local folder removed. */
  path?: string;
}

export interface PushResult {
  step: number;
  pathInRepo: string;
  manifestSha256: string;
  fileCount: number;
  totalBytes: number;
  /** Commits made: 2 (data; pointer plus remote prune), 0 when the pointed checkpoint was already this one. */
  commits: number;
  /** Remote checkpoint folders deleted. */
  prunedRemote: string[];
  /** Local checkpoint folders deleted. */
  prunedLocal: string[];
  /** Whether the history was squashed after the prune (squashHistory on a store that has history). */
  squashed: boolean;
  verify: { checkedByOid: number; checkedByDownload: number };
  timings: { hashMs: number; uploadMs: number; verifyMs: number; pointerMs: number; pruneMs: number; totalMs: number };
}

export interface PushFolderParams {
  store: CheckpointStore;
  dir: string;
  step: number;
  run: string;
  pathInRepo: string;
  terminal: boolean;
  keepLocal: number | undefined;
  /** Where the verified ledger and keepLocal's `checkpoint-<n>` folders are. @default the parent of dir */
  localRoot?: string | undefined;
  keepRemote: number | undefined;
  onPhase: ((event: PushPhaseEvent) => void | Promise<void>) | undefined;
  logger: HubCkptLogger | undefined;
  force: boolean;
  signal: AbortSignal | undefined;
  /**
   * This session's store lease: checked before each commit; holding it allows replacing an unpointed folder of this
   * run.
   */
  lease?: StoreLease | undefined;
  /**
   * After a pointer commit that pruned, squash the store's history (Hub super-squash) so the pruned bytes can be freed.
   */
  squashHistory?: boolean | undefined;
}

export function checkKeep(field: 'keepLocal' | 'keepRemote', value: unknown, min: number): void {
  if (value === undefined) return;
  if (typeof value !== 'number' || !(Number.isInteger(value) || value === Number.POSITIVE_INFINITY) || value < min) {
    throw new InvalidCheckpointOptionError(
      `${field} must be an integer >= ${min} (or Infinity to keep all), got ${JSON.stringify(value)}.`,
      { field },
    );
  }
}

/** upload folder + manifest (one commit) → verify → pointer + remote prune (one commit) → local prune. */
export async function pushFolder(p: PushFolderParams): Promise<PushResult> {
  // A store that stages the files while they are hashed (a directory store) gets its staging closed whatever happens.
  const staging = p.store.openStaging?.();
  try {
    return await pushStaged(p, staging);
  } finally {
    await staging?.close();
  }
}

async function pushStaged(p: PushFolderParams, staging: LocalStaging | undefined): Promise<PushResult> {
  // Over 150 lines: the crash-safe push order (upload, verify, pointer, prune) kept in one place so it reads in order.
  const t0 = performance.now();
  const { store, step, run, pathInRepo } = p;
  const phase = async (ph: PushPhase, path?: string): Promise<void> => {
    await p.onPhase?.(path === undefined ? { phase: ph, step, pathInRepo } : { phase: ph, step, pathInRepo, path });
  };
  const log = (line: string): void => p.logger?.info?.(line);

  await phase('hash');
  const hashFile = staging === undefined ? {} : { hashFile: staging.hash.bind(staging) };
  const built = await buildManifest({ dir: p.dir, step, run, skipCheckpointFolders: p.terminal, ...hashFile });
  const hashMs = performance.now() - t0;

  if (!(await store.exists())) {
    log(`${store.description}: creating it`);
    await store.create();
  }
  const signal = p.signal;
  signal?.throwIfAborted();
  const current = await readPointer(store);
  const pointerSha = current.raw === null ? null : sha256Hex(current.raw);
  if (current.pointer && current.pointer.run !== run) {
    throw new StaleRunError({
      pointerRun: current.pointer.run,
      run,
      pointerStep: current.pointer.step,
      where: store.description,
    });
  }
  const cur = current.pointer;
  if (cur && !p.force && cur.path_in_repo !== pathInRepo && (cur.step > step || (cur.terminal && !p.terminal))) {
    throw new PointerRegressionError({
      where: store.description,
      from: cur,
      toStep: step,
      toPath: pathInRepo,
      terminal: p.terminal,
    });
  }
  const samePointed = current.pointer?.path_in_repo === pathInRepo;
  if (samePointed && current.pointer?.manifest_sha256 !== built.sha256)
    throw new PointedCheckpointConflictError(pathInRepo);

  let commits = 0;
  const tUpload = performance.now();
  let ops: StoreOperation[] = [];
  let alreadyThere = false;
  if (!samePointed) {
    const existing = await store.list({ prefix: pathInRepo });
    // Never replace a folder holding another checkpoint (another writer's, or another attempt's), except
    // for an unpointed folder of this run while this session holds the store's lease (or with force).
    if (existing.some((e) => e.path === `${pathInRepo}/${MANIFEST_NAME}`)) {
      const theirs = await store.readFile({ path: `${pathInRepo}/${MANIFEST_NAME}` });
      if (theirs !== null && sha256Hex(theirs) !== built.sha256) {
        let theirRun: string | null = null;
        try {
          theirRun = String((JSON.parse(new TextDecoder().decode(theirs)) as { run?: unknown }).run ?? '') || null;
        } catch {
          // unreadable manifest: another writer's half-written folder at worst
        }
        if (!p.force && !(p.lease !== undefined && theirRun === run)) {
          throw new FolderConflictError({
            where: store.description,
            pathInRepo,
            theirRun,
            theirSha256: sha256Hex(theirs),
            mineSha256: built.sha256,
          });
        }
        log(`${store.description}: replacing ${pathInRepo}, an unpointed folder of this run (a previous attempt)`);
      }
    }
    const wanted = new Set([...built.files.map((f) => `${pathInRepo}/${f.name}`), `${pathInRepo}/${MANIFEST_NAME}`]);
    // The folder already holds exactly this checkpoint (a push whose pointer commit was refused, e.g. for the Hub's
    // commit quota): no second data commit; the verify below still re-reads every file.
    alreadyThere = await holdsExactly(store, existing, built, pathInRepo, wanted);
    // The manifest first: a directory store renames in this order, so a reader of a folder being replaced
    // by another writer sees the new manifest before any new file (a concurrent write, not corruption).
    ops = [
      { kind: 'put', path: `${pathInRepo}/${MANIFEST_NAME}`, bytes: built.bytes },
      ...built.files.map(
        (f): StoreOperation => ({ kind: 'put', path: `${pathInRepo}/${f.name}`, localPath: f.localPath }),
      ),
      ...existing.filter((e) => !wanted.has(e.path)).map((e): StoreOperation => ({ kind: 'delete', path: e.path })),
    ];
  }
  if (!samePointed && !alreadyThere) {
    log(`${store.description}: uploading ${pathInRepo} (${built.files.length} files, ${built.totalBytes} bytes)`);
    p.lease?.assertHeld();
    await store.commit({
      message: `soup: upload ${pathInRepo} (step ${step})`,
      operations: ops,
      // Compare-and-swap on the pointer read above: if another writer moved it since, this commit is
      // refused, so a data commit never replaces the folder a pointer names.
      ifMatch: { path: POINTER_PATH, sha256: pointerSha },
      ...(signal ? { signal } : {}),
      ...(staging === undefined ? {} : { staged: staging }),
      onProgress: async (ev) => {
        if (ev.stage === 'file') await phase('upload', ev.path);
      },
    });
    commits++;
  }
  const uploadMs = performance.now() - tUpload;
  await phase('uploaded');

  const tVerify = performance.now();
  signal?.throwIfAborted();
  const verified = await verifyCheckpoint({
    store,
    pathInRepo,
    expectedManifestSha256: built.sha256,
    expectedRun: run,
    expectedStep: step,
    gitOids: new Map(built.files.flatMap((f) => (f.gitSha1 === undefined ? [] : [[f.name, f.gitSha1] as const]))),
    ...(signal ? { signal } : {}),
  });
  const verifyMs = performance.now() - tVerify;
  if (!verified.ok) {
    // Another writer replacing the folder since this push's upload is a concurrent write, not a store altering data.
    const nowManifest = await store.readFile({ path: `${pathInRepo}/${MANIFEST_NAME}` });
    if (nowManifest !== null && sha256Hex(nowManifest) !== built.sha256) {
      throw new ConcurrentWriteError({
        path: `${pathInRepo}/${MANIFEST_NAME}`,
        writer: `its manifest is now ${sha256Hex(nowManifest).slice(0, 12)}…`,
        where: store.description,
      });
    }
    if (!samePointed) await removeOwnUpload(p, pathInRepo, pointerSha, built.sha256);
    throw new VerifyError({ pathInRepo, problems: verified.problems });
  }
  await phase('verified');
  const parent = resolve(p.localRoot ?? dirname(resolve(p.dir)));
  const identity = storeIdentity(store);
  // The local record that this folder verified is written while the pointer commit runs: it is true whatever that
  // commit does, and neither reading nor writing it throws (a failed write is a warning).
  const ledgerWritten = readLedger(parent).then(async (ledger) => {
    if (pathInRepo !== 'final') {
      await recordVerified({ parent, ledger, step, identity, sha256: built.sha256, logger: p.logger });
    }
    return ledger;
  });
  const tPointer = performance.now();
  const pointing = (async () => {
    signal?.throwIfAborted();
    return samePointed ? [] : await movePointer(p, pointerSha, built.sha256, phase);
  })();
  const [ledgerRead, pointed] = await Promise.allSettled([ledgerWritten, pointing]);
  if (pointed.status === 'rejected') throw pointed.reason;
  const ledger = ledgerRead.status === 'fulfilled' ? ledgerRead.value : {};
  const prunedRemote = pointed.value;
  if (!samePointed) commits++;
  const pointerMs = performance.now() - tPointer;
  await phase('pointed');
  let squashed = false;
  if (p.squashHistory && prunedRemote.length > 0 && store.squashHistory) {
    // After the pointer commit: a squash keeps the files (pointer, lease, kept folders) and drops history,
    // so a crash here loses nothing; a failed squash only delays freeing the bytes until the next one.
    try {
      p.lease?.assertHeld();
      await store.squashHistory({ message: `soup: squash history after pruning ${prunedRemote.join(', ')}` });
      squashed = true;
      log(`${store.description}: history squashed (pruned bytes can now be freed)`);
    } catch (err) {
      p.logger?.warn?.(
        `${store.description}: squashing the history failed (${(err as Error).message}); the next prune tries again`,
      );
    }
  }

  const tPrune = performance.now();
  const prunedLocal: string[] = [];
  if (p.keepLocal !== undefined && p.keepLocal !== Number.POSITIVE_INFINITY) {
    const localSteps: Array<{ step: number; path: string }> = [];
    for (const e of await readdir(parent, { withFileTypes: true })) {
      const s = stepOfLocalName(e.name);
      if (e.isDirectory() && s !== null && s <= step) localSteps.push({ step: s, path: join(parent, e.name) });
    }
    localSteps.sort((a, b) => b.step - a.step);
    for (const old of localSteps.slice(p.keepLocal)) {
      // Only a folder whose push verified to this store may go: anything else may be the only copy here.
      if (!verifiedTo(ledger, old.step, identity) && old.path !== resolve(p.dir)) {
        log(
          `kept local ${basename(old.path)}: no verified push of it to ${store.description} is recorded in ` +
            VERIFIED_LEDGER,
        );
        continue;
      }
      await rm(old.path, { recursive: true, force: true });
      prunedLocal.push(old.path);
      log(`pruned local ${basename(old.path)}`);
      await phase('prune', old.path);
    }
  }
  const pruneMs = performance.now() - tPrune;
  await phase('done');
  return {
    step,
    pathInRepo,
    manifestSha256: built.sha256,
    fileCount: built.files.length,
    totalBytes: built.totalBytes,
    commits,
    prunedRemote,
    prunedLocal,
    squashed,
    verify: { checkedByOid: verified.checkedByOid, checkedByDownload: verified.checkedByDownload },
    timings: { hashMs, uploadMs, verifyMs, pointerMs, pruneMs, totalMs: performance.now() - t0 },
  };
}

/**
 * After a verify failure: deletes the folder this push uploaded, so a later push is not refused as another
 * writer's and status does not list it. Only while the pointer and the folder's manifest are still this push's
 * (compare-and-swap); a failure to remove is a warning, the verify error stays the one thrown.
 */
async function removeOwnUpload(
  p: PushFolderParams,
  pathInRepo: string,
  pointerSha: string | null,
  manifestSha: string,
): Promise<void> {
  const { store } = p;
  try {
    const files = await store.list({ prefix: pathInRepo });
    if (files.length === 0) return;
    p.lease?.assertHeld();
    await store.commit({
      message: `soup: remove ${pathInRepo} (step ${p.step}), an upload that did not verify`,
      operations: files.map((e): StoreOperation => ({ kind: 'delete', path: e.path })),
      ifMatch: [
        { path: POINTER_PATH, sha256: pointerSha },
        { path: `${pathInRepo}/${MANIFEST_NAME}`, sha256: manifestSha },
      ],
    });
    p.logger?.info?.(`${store.description}: removed ${pathInRepo}, this push's upload that did not verify`);
  } catch (err) {
    p.logger?.warn?.(
      `${store.description}: could not remove ${pathInRepo} after the failed verify (${(err as Error).message})`,
    );
  }
}
