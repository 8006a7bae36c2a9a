import type { StoreLease } from './store-lease';
import { assertStepAndRun } from './build-manifest';
import { checkKeep, pushFolder, type PushPhaseEvent, type PushResult } from './_push';
import { FINAL_PATH } from './_layout';
import type { CheckpointStore, HubCkptLogger } from './types';

export interface PushFinalOptions {
  store: CheckpointStore;
  /** The last training step (the horizon). */
  step: number;
  /** Local folder of the final checkpoint. */
  dir: string;
  run: string;
  /** Remote `ckpt/` folders to keep, newest first (0 removes them all). @default undefined (keep all) */
  keepRemote?: number;
  /** Local `checkpoint-<n>` siblings of `dir` to keep. @default undefined (keep all) */
  keepLocal?: number;
  /** @default none */
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

/** Pushes `final/` in the same crash-safe order and points latest.json at it with `terminal: true`. */
export async function pushFinal(opts: PushFinalOptions): Promise<PushResult> {
  assertStepAndRun(opts.step, opts.run);
  checkKeep('keepLocal', opts.keepLocal, 0);
  checkKeep('keepRemote', opts.keepRemote, 0);
  return pushFolder({
    store: opts.store,
    dir: opts.dir,
    step: opts.step,
    run: opts.run,
    pathInRepo: FINAL_PATH,
    terminal: true,
    keepLocal: opts.keepLocal,
    keepRemote: opts.keepRemote,
    onPhase: opts.onPhase,
    logger: opts.logger,
    force: opts.force ?? false,
    signal: opts.signal,
    lease: opts.lease,
    squashHistory: opts.squashHistory ?? false,
  });
}
