import type { StoreLease } from './store-lease';
import { type Clock, systemClock } from './clock';
import { CommitQuotaError, InvalidCheckpointOptionError } from './errors';
import { pushCheckpoint, type PushPhaseEvent, type PushResult } from './push-checkpoint';
import { autoSquash, DEFAULT_SQUASH_AFTER_COMMITS } from './_auto-squash';
import type { CheckpointStore, HubCkptLogger } from './types';

/** The Hub's default least time between two pushes' starts: 5 min, as its own CommitScheduler keeps. */
export const DEFAULT_HUB_MIN_COMMIT_INTERVAL_MS = 300_000;

/** The least time between two pushes a store gets when none is given: 5 min on the Hub, 0 on a directory. */
export function defaultMinCommitIntervalMs(store: Pick<CheckpointStore, 'kind'>): number {
  return store.kind === 'hub' ? DEFAULT_HUB_MIN_COMMIT_INTERVAL_MS : 0;
}

/** A commit-quota refusal, reported once per episode (until a push lands again). */
export interface CommitQuotaEvent {
  /** The step whose push was refused. */
  step: number;
  /** What the Hub asked to wait, or null when it said nothing (soup then backs off). */
  retryAfterMs: number | null;
  /** When the queue tries again (ms since the epoch, by its clock). */
  retryAtMs: number;
}

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
  /**
   * `true`: squash the Hub repo's history after each push that pruned (see pushCheckpoint). `'auto'`: squash once
   * the history passes `squashAfterCommits` commits (the pointed and kept folders stay). @default false
   */
  squashHistory?: boolean | 'auto';
  /** With `squashHistory: 'auto'`: the history length that triggers a squash. @default 500 */
  squashAfterCommits?: number;
  /**
   * Least time between the starts of two pushes (each is two commits): a checkpoint offered sooner waits, and a
   * newer one replaces it (the newest wins). `drain()` (the session end) never waits for it.
   * @default defaultMinCommitIntervalMs(store): 5 min on the Hub, 0 on a directory
   */
  minCommitIntervalMs?: number;
  /**
   * Called once when the Hub refuses a commit for its hourly commit quota, not per retry: the queue waits
   * `Retry-After` (or backs off: 5 min, doubling, at most 1 h) and then pushes the newest checkpoint. @default none
   */
  onCommitQuota?: (event: CommitQuotaEvent) => void;
  /** The clock of the interval and the quota waits. @default the system clock */
  clock?: Clock;
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
  /**
   * Resolves once nothing is pushing or waiting: the waiting checkpoint starts at once, whatever the interval
   * (a quota refusal is still waited out). Never rejects (failures go to `onError`).
   */
  drain(): Promise<void>;
  /** Waits for the push in flight only; a checkpoint held by the interval or a quota wait stays queued. */
  settle(): Promise<void>;
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
  /** The job queued (held by the interval or a quota wait, or about to start), or null. */
  readonly waiting: PushJob | null;
  /** Commit-quota refusals met (each retried later), reported or not. */
  readonly quotaRefusals: number;
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
 * goes on. It paces its commits: a push starts at least `minCommitIntervalMs` after the previous one
 * started, and a commit-quota refusal is waited out, then the newest checkpoint pushed. The trainer never
 * waits on it.
 */
export function createPushQueue(opts: PushQueueOptions): PushQueue {
  // Over 150 lines: the queue's state is shared by its loop, its one timer and its methods in one closure.
  const clock = opts.clock ?? systemClock;
  const intervalMs = opts.minCommitIntervalMs ?? defaultMinCommitIntervalMs(opts.store);
  if (!Number.isFinite(intervalMs) || intervalMs < 0) {
    throw new InvalidCheckpointOptionError(`minCommitIntervalMs must be a number of ms >= 0, got ${intervalMs}.`, {
      field: 'minCommitIntervalMs',
    });
  }
  const squashAfter = opts.squashAfterCommits ?? DEFAULT_SQUASH_AFTER_COMMITS;
  let pushedStep = opts.afterStep ?? -1;
  let offeredStep = pushedStep;
  let waiting: PushJob | null = null;
  let current: PushJob | null = null;
  let currentAbort: AbortController | null = null;
  let loop: Promise<void> | null = null;
  let lastStartMs: number | null = null;
  let blockedUntilMs = 0;
  let refusalsInEpisode = 0;
  let quotaRefusals = 0;
  let flushing = 0;
  let timer: unknown;
  let wakers: Array<() => void> = [];
  const skipped: PushJob[] = [];
  const results: PushResult[] = [];
  const failures: Array<{ job: PushJob; error: unknown }> = [];

  const wake = (): void => {
    const w = wakers;
    wakers = [];
    for (const f of w) f();
  };
  // The session end (drain) never waits for the interval; nothing pushes through a quota refusal.
  const startAtMs = (): number =>
    Math.max(blockedUntilMs, flushing > 0 || lastStartMs === null ? 0 : lastStartMs + intervalMs);

  const refused = (err: CommitQuotaError, job: PushJob): void => {
    quotaRefusals++;
    refusalsInEpisode++;
    const waitMs = err.retryAfterMs ?? Math.min(3_600_000, 300_000 * 2 ** (refusalsInEpisode - 1));
    blockedUntilMs = clock.now() + waitMs;
    // The refused checkpoint goes back in line unless a newer one arrived meanwhile (the newest wins).
    if (waiting === null) waiting = job;
    else skipped.push(job);
    if (refusalsInEpisode > 1) return;
    opts.logger?.warn?.(
      `${opts.store.description}: the Hub refused a commit for its hourly commit quota; training goes on, and ` +
        `the newest checkpoint is pushed in ${Math.ceil(waitMs / 1000)} s` +
        `${err.retryAfterMs === null ? ' (no Retry-After: backing off)' : ''}`,
    );
    opts.onCommitQuota?.({ step: job.step, retryAfterMs: err.retryAfterMs, retryAtMs: blockedUntilMs });
  };

  const run = async (): Promise<void> => {
    while (waiting !== null && startAtMs() <= clock.now()) {
      const job = waiting;
      waiting = null;
      current = job;
      currentAbort = new AbortController();
      lastStartMs = clock.now();
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
          ...(opts.squashHistory === true ? { squashHistory: true } : {}),
        });
        pushedStep = Math.max(pushedStep, job.step);
        if (refusalsInEpisode > 0) {
          opts.logger?.info?.(`${opts.store.description}: step ${job.step} pushed after the commit-quota wait`);
          refusalsInEpisode = 0;
        }
        const squashed =
          opts.squashHistory === 'auto' &&
          (await autoSquash({ store: opts.store, lease: opts.lease, afterCommits: squashAfter, logger: opts.logger }));
        const done = squashed ? { ...res, squashed: true } : res;
        results.push(done);
        opts.onPushed?.(done);
      } catch (err) {
        if (err instanceof CommitQuotaError) {
          refused(err, job);
          continue;
        }
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
      schedule();
      wake();
    });
    wake();
  };

  // Starts the waiting job now, or arms one timer for when the interval or the quota wait ends.
  function schedule(): void {
    if (timer !== undefined) clock.clearTimeout(timer);
    timer = undefined;
    if (loop !== null || waiting === null) {
      wake();
      return;
    }
    const delayMs = startAtMs() - clock.now();
    if (delayMs <= 0) {
      kick();
      return;
    }
    timer = clock.setTimeout(() => {
      timer = undefined;
      schedule();
    }, delayMs);
  }

  return {
    offer(job) {
      if (!Number.isInteger(job.step) || job.step < 0)
        throw new TypeError(`push queue: step must be an integer >= 0, got ${job.step}`);
      if (job.step <= offeredStep) return;
      offeredStep = job.step;
      if (waiting !== null) skipped.push(waiting);
      waiting = job;
      schedule();
    },
    async drain() {
      flushing++;
      try {
        schedule();
        while (loop !== null || waiting !== null) {
          if (loop !== null) {
            await loop;
            continue;
          }
          // A quota wait: the clock's timer may not hold the process open, so this does until it fires.
          const hold = setInterval(() => {}, 60_000);
          try {
            await new Promise<void>((r) => wakers.push(r));
          } finally {
            clearInterval(hold);
          }
        }
      } finally {
        flushing--;
      }
    },
    async settle() {
      while (loop !== null) await loop;
    },
    clear() {
      if (waiting !== null) skipped.push(waiting);
      waiting = null;
      schedule();
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
    get waiting() {
      return waiting;
    },
    get quotaRefusals() {
      return quotaRefusals;
    },
    skipped,
    results,
    failures,
  };
}
