// The push queue of one session: offers this run's complete checkpoints to @soup/hub-ckpt's queue while the
// trainer runs, and at the end pushes the newest one (or with pushEach, every one left) before anything is claimed.
import {
  createPushQueue,
  type CheckpointStore,
  type PushJob,
  type PushPhaseEvent,
  type PushQueue,
  type StoreLease,
} from '@soup/hub-ckpt';
import type { SessionFacts, SessionOptions } from './supervise-options';
import type { CheckpointWatcher, WatchedCheckpoint } from './watch-checkpoints';
import { assertUnchanged, ChangedDuringPush, createPushSources, sourceChange, type PushSource } from './_push-sources';
import { fmt, type Tell } from './_tell';

/** pushEach: how many times a step's push is tried before newer steps go past it. */
const PUSH_EACH_TRIES = 3;

/** The session's pushes. */
export interface SessionPushes {
  readonly queue: PushQueue;
  /** Set once the session is ending: a newer checkpoint then aborts the push in flight rather than waiting. */
  ending: boolean;
  /** Scans, and offers the newest complete checkpoint (pushEach: the oldest not pushed); returns the newest one. */
  offerNewest(asOfMs: number, trainerExited: boolean): WatchedCheckpoint | null;
  /**
   * Whatever the exit: the newest complete checkpoint newer than the pointer is pushed (pushEach: all left, oldest
   * first), a failed last push retried once when its files are unchanged; the staging folders are then removed.
   */
  pushRest(exitAtMs: number, trainerExited: boolean): Promise<void>;
}

/** Starts the push queue of one session of run `runId`, which resumed from `resumedStep` (-1: fresh). */
export function createSessionPushes(p: {
  o: SessionOptions;
  store: CheckpointStore;
  runId: string;
  resumedStep: number;
  keepRemote: number;
  lease: StoreLease | null;
  watcher: CheckpointWatcher;
  facts: SessionFacts;
  tell: Tell;
  /** A follower node: it shares node 0's output folder, so node 0's snapshots there are not its own. */
  follower?: boolean;
}): SessionPushes {
  // Over 150 lines: the queue's callbacks share one session's snapshots, retries and passed-over steps.
  const { o, store, runId, resumedStep, keepRemote, watcher, facts } = p;
  const { emit, say, warn, show } = p.tell;
  const sources = createPushSources({
    outputDir: o.outputDir,
    copyLimitBytes: o.snapshotCopyLimitBytes,
    tell: p.tell,
    owner: p.follower !== true,
  });
  // What each push started from, by step.
  const pushing = new Map<number, PushSource>();
  const jobs = new Map<string, PushSource>();
  const onPhase = (e: PushPhaseEvent): void => {
    const src = pushing.get(e.step);
    if (!src) return;
    if (e.phase === 'hash') emit('pushing', `pushing ${e.pathInRepo} (step ${e.step})…`, { step: e.step });
    if (e.phase === 'hash' || e.phase === 'verified') assertUnchanged(src, show);
  };
  // A snapshot stays while its push may still need it: the push in flight, the job waiting, the last failed push
  // (retried at the end); any other (pushed, or passed over by a newer one) goes at once.
  let queued: number | null = null;
  const pruneSnapshots = (): void =>
    sources.prune([queue.current?.step, queued, queue.failures.at(-1)?.job.step], queue.pushedStep);
  // pushEach: a failed step is tried again, oldest first, before it is passed over (PUSH_EACH_TRIES in all), so one
  // transient failure leaves no hole in the pushed steps; once a newer step moved the pointer it cannot be pushed.
  let passedOver = -1;
  const tries = new Map<number, number>();
  const queue = createPushQueue({
    store,
    run: runId,
    afterStep: resumedStep,
    keepRemote,
    localRoot: o.outputDir,
    ...(o.keepLocal !== undefined ? { keepLocal: o.keepLocal } : {}),
    ...(p.lease ? { lease: p.lease } : {}),
    ...(o.squashHistory !== undefined ? { squashHistory: o.squashHistory } : {}),
    ...(o.minCommitIntervalMs !== undefined ? { minCommitIntervalMs: o.minCommitIntervalMs } : {}),
    onCommitQuota: (e) =>
      warn(`the Hub's hourly commit quota refused step ${e.step}: training goes on; the newest is pushed later`),
    onPushed: (r) => (
      facts.pushedSteps.push(r.step),
      emit(
        'pushed',
        `pushed ${r.pathInRepo} (step ${r.step}, ${r.fileCount} files, verified; latest.json moved) in ` +
          `${fmt(r.timings.totalMs)}`,
        { step: r.step },
      ),
      pruneSnapshots()
    ),
    onError: (err, job) => {
      const e = err as Error;
      if (o.pushEach) {
        tries.set(job.step, (tries.get(job.step) ?? 0) + 1);
        if ((tries.get(job.step) ?? 0) >= PUSH_EACH_TRIES) passedOver = Math.max(passedOver, job.step);
      }
      if (lastOffer?.step === job.step && !(e instanceof ChangedDuringPush)) lastOffer = null;
      pruneSnapshots();
      if (/^superseded by step/.test(e.message)) return;
      emit(
        'push-failed',
        e instanceof ChangedDuringPush
          ? `push of step ${job.step} not pointed to: ${e.message}`
          : `push of step ${job.step} failed: ${e.message}`,
        { step: job.step },
      );
    },
    onPhase,
  });
  // The last offer (a step is offered again only when its files changed after a failed push).
  let lastOffer: { step: number; sig: string } | null = null;
  const offer = (c: WatchedCheckpoint): void => {
    if (c.step <= queue.pushedStep) return;
    if (lastOffer !== null && (c.step < lastOffer.step || (c.step === lastOffer.step && c.signature === lastOffer.sig)))
      return;
    if (queue.current?.step === c.step) return; // its push is still running: judged when it ends
    lastOffer = { step: c.step, sig: c.signature };
    // At once, before the trainer's rotation can delete it: the push reads the snapshot, not the trainer's folder.
    const { dir, src } = sources.take(c);
    const job: PushJob = { step: c.step, dir };
    jobs.set(dir, src);
    pushing.set(c.step, src);
    queued = c.step;
    queue.offer(job);
    pruneSnapshots();
  };
  // pushEach: the oldest complete checkpoint not pushed yet, once the queue is free (a failed one is tried again,
  // then passed over: the next newer one goes, and the newest is retried at the end, as without pushEach).
  const offerNext = (asOfMs: number, trainerExited: boolean): void => {
    if (queue.current !== null) return;
    const after = Math.max(queue.pushedStep, passedOver, resumedStep);
    const c = watcher.oldestCompleteAfter(after, { asOfMs, trainerExited });
    if (!c) return;
    offer(c.checkpoint);
    const tried = tries.get(c.checkpoint.step) ?? 0;
    const now = queue.current as PushJob | null; // set by the offer when its push started at once
    if (tried > 0 && now?.step === c.checkpoint.step)
      say(`retrying the push of step ${c.checkpoint.step} (try ${tried + 1} of ${PUSH_EACH_TRIES})`);
  };
  const self: SessionPushes = {
    queue,
    ending: false,
    offerNewest(asOfMs, trainerExited) {
      watcher.scan(Date.now());
      if (o.pushEach) {
        offerNext(asOfMs, trainerExited);
        return watcher.newestComplete({ asOfMs, trainerExited })?.checkpoint ?? null;
      }
      const c = watcher.newestComplete({ asOfMs, trainerExited });
      if (c) {
        offer(c.checkpoint);
        if (self.ending && queue.abortSuperseded())
          say(`a newer checkpoint (step ${c.checkpoint.step}) superseded the push in flight: aborted it`);
      }
      return c?.checkpoint ?? null;
    },
    async pushRest(exitAt, trainerExited) {
      try {
        await pushNewest(exitAt, trainerExited);
      } finally {
        sources.end();
      }
    },
  };
  const pushNewest = async (exitAt: number, trainerExited: boolean): Promise<void> => {
    self.offerNewest(exitAt, trainerExited);
    await queue.drain();
    // pushEach: the rest, oldest first.
    while (o.pushEach) {
      self.offerNewest(exitAt, trainerExited);
      if (queue.current === null && queue.waiting === null) break;
      await queue.drain();
    }
    // A push that saw its folder change ("pushed again once it settles") while the trainer wrote it as it exited: no
    // later scan would offer it again, and the folder has now stopped changing, so it is taken and pushed anew (twice
    // at most: a process the trainer left behind may still be writing).
    for (let again = 0; again < 2 && trainerExited; again++) {
      const changed = queue.failures.at(-1);
      if (!changed || changed.job.step <= queue.pushedStep || !(changed.error instanceof ChangedDuringPush)) break;
      say(`step ${changed.job.step} changed while it was pushed and the trainer has exited: pushing it again`);
      self.offerNewest(exitAt, trainerExited);
      if (queue.current === null && queue.waiting === null) break;
      await queue.drain();
    }
    const last = queue.failures.at(-1);
    if (last && last.job.step > queue.pushedStep && !(last.error instanceof ChangedDuringPush)) {
      const src = jobs.get(last.job.dir);
      if (src && sourceChange(src) === null) {
        warn(`retrying the push of step ${last.job.step}`);
        pushing.set(last.job.step, src);
        queue.offer(last.job);
        await queue.drain();
      }
    }
  };
  return self;
}
