import type { StoreLease } from './store-lease';
import { pushCheckpoint, type PushPhaseEvent, type PushResult } from './push-checkpoint';
import type { CheckpointStore, HubCkptLogger } from './types';

/** Options of {@link createPushQueue}. */
export interface PushQueueOptions {
  store: CheckpointStore;
  /** Run fingerprint written into every manifest and the pointer. */
  run: string;
  /**
   * Steps at or below this one are never pushed (e.g. the checkpoint this session resumed from).
   * @default -1
   */
  afterStep?: number;
  /**
   * Local `checkpoint-<n>` siblings to keep (see `pushCheckpoint`). @default Infinity (the trainer owns its folders)
   */
  keepLocal?: number;
  /**
   * The folder of the trainer's checkpoints, when jobs push copies from elsewhere (see `pushCheckpoint`).
   * @default the parent of each job's dir
   */
  localRoot?: string;
  /** Remote checkpoints to keep, newest first. @default undefined (keep all) */
  keepRemote?: number;
  /** Called once a push is verified and the pointer moved. @default none */
  onPushed?: (result: PushResult) => void;
  /** Called when a push fails; the queue goes on with the next folder offered. @default none */
  onError?: (err: unknown, job: PushJob) => void;
  /** Passed to each push (progress, or a test's crash point). @default none */
  onPhase?: (event: PushPhaseEvent) => void | Promise<void>;
  /** @default silent */
  logger?: HubCkptLogger;
  /** This session's store lease, passed to each push (see pushCheckpoint). @default none */
  lease?: StoreLease;
  /** Squash the Hub repo's history after a push that pruned (see pushCheckpoint). @default false */
  squashHistory?: boolean;
}

/** One complete checkpoint folder offered to the queue. */
export interface PushJob {
  step: number;
  dir: string;
}

/** A background pusher fed by "this folder is complete" events. */
export interface PushQueue {
  /**
   * Offers a complete checkpoint folder. Ignored when its step is not newer than the last pushed or
   * offered one; otherwise it replaces whatever was waiting (newest wins). Never blocks.
   */
  offer(job: PushJob): void;
  /** Resolves once nothing is pushing or waiting. Never rejects (failures go to `onError`). */
  drain(): Promise<void>;
  /** Drops the waiting job (the one pushing finishes). */
  clear(): void;
  /**
   * Aborts the push in flight when a newer job waits (its pointer never moves; the newer one is pushed
   * next): at a session end only the newest checkpoint is worth the time left. Returns whether one was aborted.
   */
  abortSuperseded(): boolean;
  /** Step of the last verified push (or `afterStep`). */
  readonly pushedStep: number;
  /** The job being pushed now, or null. */
  readonly current: PushJob | null;
  /** Jobs that were replaced by a newer one before they started. */
  readonly skipped: readonly PushJob[];
  /** Results of the pushes done, in order. */
  readonly results: readonly PushResult[];
  /** Jobs whose push failed, with the error. */
  readonly failures: ReadonlyArray<{ job: PushJob; error: unknown }>;
}

/**
 * A push queue: one `pushCheckpoint` at a time (push → verify → pointer → prune), the newest waiting
 * folder wins, older ones offered meanwhile are skipped, a failed push is reported and the queue
 * goes on. The trainer never waits on it.
 */
export function createPushQueue(opts: PushQueueOptions): PushQueue {
  let pushedStep = opts.afterStep ?? -1;
  let offeredStep = pushedStep;
  let waiting: PushJob | null = null;
  let current: PushJob | null = null;
  let currentAbort: AbortController | null = null;
  let loop: Promise<void> | null = null;
  const skipped: PushJob[] = [];
  const results: PushResult[] = [];
  const failures: Array<{ job: PushJob; error: unknown }> = [];

  const run = async (): Promise<void> => {
    while (waiting !== null) {
      const job = waiting;
      waiting = null;
      current = job;
      currentAbort = new AbortController();
      try {
        const res = await pushCheckpoint({
          store: opts.store,
          step: job.step,
          dir: job.dir,
          run: opts.run,
          keepLocal: opts.keepLocal ?? Number.POSITIVE_INFINITY,
          ...(opts.localRoot !== undefined ? { localRoot: opts.localRoot } : {}),
          ...(opts.keepRemote !== undefined ? { keepRemote: opts.keepRemote } : {}),
          ...(opts.onPhase ? { onPhase: opts.onPhase } : {}),
          ...(opts.logger ? { logger: opts.logger } : {}),
          signal: currentAbort.signal,
          ...(opts.lease ? { lease: opts.lease } : {}),
          ...(opts.squashHistory ? { squashHistory: true } : {}),
        });
        pushedStep = Math.max(pushedStep, job.step);
        results.push(res);
        opts.onPushed?.(res);
      } catch (err) {
        failures.push({ job, error: err });
        // The same folder (or an older one) may be offered again, e.g. at session end.
        const next = waiting as PushJob | null;
        offeredStep = next === null ? pushedStep : Math.max(pushedStep, next.step);
        opts.onError?.(err, job);
      } finally {
        current = null;
        currentAbort = null;
      }
    }
  };

  const kick = (): void => {
    if (loop !== null) return;
    loop = run().finally(() => {
      loop = null;
      if (waiting !== null) kick();
    });
  };

  return {
    offer(job) {
      if (!Number.isInteger(job.step) || job.step < 0)
        throw new TypeError(`push queue: step must be an integer >= 0, got ${job.step}`);
      if (job.step <= offeredStep) return;
      offeredStep = job.step;
      if (waiting !== null) skipped.push(waiting);
      waiting = job;
      kick();
    },
    async drain() {
      while (loop !== null) await loop;
    },
    clear() {
      if (waiting !== null) skipped.push(waiting);
      waiting = null;
    },
    abortSuperseded() {
      if (current === null || waiting === null || currentAbort === null || waiting.step <= current.step) return false;
      currentAbort.abort(new Error(`superseded by step ${waiting.step}`));
      return true;
    },
    get pushedStep() {
      return pushedStep;
    },
    get current() {
      return current;
    },
    skipped,
    results,
    failures,
  };
}
