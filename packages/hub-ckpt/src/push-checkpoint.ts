import type { StoreLease } from './store-lease';
import { assertStepAndRun } from './build-manifest';
import { checkKeep, pushFolder, type PushPhaseEvent, type PushResult } from './_push';
import { checkpointPath } from './_layout';
import type { CheckpointStore, HubCkptLogger } from './types';

export type { PushPhase, PushPhaseEvent, PushResult } from './_push';

export interface PushCheckpointOptions {
  store: CheckpointStore;
  /** Training step; the folder goes to `ckpt/checkpoint-<step>/`. */
  step: number;
  /** Local checkpoint folder (e.g. `out/checkpoint-120`). */
  dir: string;
  /** Run fingerprint, the same in every session of the run. */
  run: string;
  /**
   * Local `checkpoint-<n>` folders (siblings of `dir`, n <= step) to keep, newest first; older ones are
   * deleted once the pointer moved, and only when their own push verified (recorded in
   * `.soup-verified.json` beside them). `Infinity` keeps them all. @default Infinity
   */
  keepLocal?: number;
  /**
   * The folder holding the trainer's `checkpoint-<n>` folders: `.soup-verified.json` and `keepLocal`'s prune live
   * there. Set it when `dir` is a copy elsewhere (a snapshot taken so the trainer's rotation cannot delete it
   * mid-push), so the copy's siblings are not taken for checkpoints. @default the parent of `dir`
   */
  localRoot?: string;
  /**
   * Remote `ckpt/checkpoint-<n>` folders (n <= step) to keep, newest first (at least 2, so one older
   * checkpoint stays to fall back to); older ones are deleted in the pointer's commit, never the one the
   * pointer names. @default undefined (no remote prune)
   */
  keepRemote?: number;
  /** Awaited at each phase (progress, or a test's crash point). @default none */
  onPhase?: (event: PushPhaseEvent) => void | Promise<void>;
  /** @default silent */
  logger?: HubCkptLogger;
  /** Move latest.json even to a lower step or off a terminal pointer. @default false */
  force?: boolean;
  /**
   * This session's store lease (see acquireLease): checked before each commit (LeaseLostError once another
   * writer took it); while held, an unpointed folder of this run left by a previous attempt may be replaced. @default
   * none
   */
  lease?: StoreLease;
  /**
   * After a push that pruned remote folders, squash the repo's history (the Hub's super-squash), so the
   * pruned bytes can be freed: deleting files alone frees no storage on the Hub. No-op on a directory store. @default
   * false
   */
  squashHistory?: boolean;
  /** Aborts between files and requests; the pointer only moves after a verified upload. @default none */
  signal?: AbortSignal;
}

/**
 * Pushes one checkpoint in the order that survives any crash: upload the folder and its
 * manifest.json (one commit) → verify every file from the store's side → move latest.json, pruning
 * old remote folders in the same commit → prune local copies. The pointer only ever names a
 * verified checkpoint.
 */
export async function pushCheckpoint(opts: PushCheckpointOptions): Promise<PushResult> {
  assertStepAndRun(opts.step, opts.run);
  const keepLocal = opts.keepLocal ?? Number.POSITIVE_INFINITY;
  checkKeep('keepLocal', keepLocal, 0);
  checkKeep('keepRemote', opts.keepRemote, 2);
  return pushFolder({
    store: opts.store,
    dir: opts.dir,
    step: opts.step,
    run: opts.run,
    pathInRepo: checkpointPath(opts.step),
    terminal: false,
    keepLocal,
    localRoot: opts.localRoot,
    keepRemote: opts.keepRemote,
    onPhase: opts.onPhase,
    logger: opts.logger,
    force: opts.force ?? false,
    signal: opts.signal,
    lease: opts.lease,
    squashHistory: opts.squashHistory ?? false,
  });
}
