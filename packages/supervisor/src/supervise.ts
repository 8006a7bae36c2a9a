// supervise(): run the user's own trainer for one session: resume from the store, launch, push this run's
// complete checkpoints while it trains, and at its end claim only what the evidence shows.
import { acquireLease, type StoreLease } from '@soup/hub-ckpt';
import { startMemoryWatch } from './memory-watch';
import { trackNewestStep } from './newest-step';
import { identityOf, supervisedFingerprint } from './run-identity';
import type { SessionFacts, SuperviseOptions, SuperviseOutcome } from './supervise-options';
import { resolveBatch } from './_batch-size';
import { checkOptions } from './_check-options';
import { leaseOptionsOf } from './_lease-options';
import { claimRun } from './_claim-run';
import { launchOnce, type LaunchEnd } from './_launch';
import { completeInStore, pullResume } from './_pull-resume';
import { recordHorizonChange } from './_record-horizon';
import { recordSaver } from './_record-saver';
import { endSession } from './_session-end';
import { createSessionPushes } from './_session-pushes';
import { watchStop } from './_session-stop';
import { planStepDown } from './_step-down';
import { createTell } from './_tell';
import { lockOutput, watchOutput } from './_watch-output';

export {
  STOP_SIGNALS,
  type SessionFacts,
  type SuperviseEvent,
  type SuperviseOptions,
  type SuperviseOutcome,
} from './supervise-options';

/**
 * Supervises one session of the user's trainer. Rules (each acted on only with its evidence):
 * - complete checkpoint: see {@link createCheckpointWatcher}; and what was pushed equals what is on disk
 *   when the push ends (names, sizes, mtimes), else the pointer does not move and it is pushed again once settled;
 * - this run's checkpoint: appeared or changed after launch, or the one pulled for this session;
 * - complete run: exit 0, no signal seen, and the horizon reached when one is known (see {@link judgeHorizon});
 * - on any trainer exit the newest complete checkpoint newer than the pointer is pushed first.
 */
export async function supervise(o: SuperviseOptions): Promise<SuperviseOutcome & SessionFacts> {
  // Over 150 lines: the session's phases (claim, resume, batch, launch, pushes, end) share its store and run id.
  const t0 = o.startedAtMs ?? Date.now();
  const tell = createTell(o);
  const { say, warn, show } = tell;
  const { stopSignal, used, horizon, G, worldSize } = checkOptions(o);
  const settleMs = o.settleMs ?? 10_000;
  const graceMs = o.graceMs ?? 120_000;
  const pollMs = o.pollMs ?? 1000;
  const keepRemote = o.keepRemote ?? 3;
  const storeName = o.storeName ?? o.store.description;
  const { store } = o;

  // 1. Identity and stale guard.
  const secrets = o.secrets ?? [];
  const identity = identityOf(o.argv, o.fingerprintFiles ?? [], o.cwd, secrets, G);
  const fingerprint = o.runId ?? supervisedFingerprint(identity);
  const ownRecord = (o.runId ?? null) === null;
  // One writer per store: refused here (LeaseHeldError names the holder), before anything is written or launched.
  const lease: StoreLease | null =
    o.leaseTtlMs === null
      ? null
      : await acquireLease({ store, run: fingerprint, ...leaseOptionsOf(o), logger: { warn, info: say } });
  try {
    return await underLease();
  } finally {
    await lease?.release();
  }

  async function underLease(): Promise<SuperviseOutcome & SessionFacts> {
    const force = o.resume === 'force';
    const claimed = await claimRun({ store, storeName, fingerprint, identity, ownRecord, resume: o.resume, tell });
    let { record } = claimed;
    let { runId } = claimed;

    // 2. One supervisor per output folder.
    const lock = lockOutput(o.outputDir, tell);
    const facts = emptyFacts(G, worldSize);
    try {
      return { ...(await supervised()), ...facts };
    } finally {
      lock.release();
    }

    // The session loop: resume, batch, launch (again after each out-of-memory step-down), push, end.
    async function supervised(): Promise<SuperviseOutcome> {
      // 3. Resume.
      const pulled = await pullResume({ o, store, storeName, runId, force, facts, tell });
      const { resumed } = pulled;
      runId = pulled.runId;
      if (resumed.outcome === 'complete') return completeInStore(resumed, runId, storeName, tell);
      if (resumed.outcome === 'resume') {
        const { dir, step } = resumed;
        record = await recordHorizonChange({ store, runId, identity, record, horizon, dir, step, tell });
      }

      // 4. Batch size; with a global batch, this device's m (cache, then probe), G kept, recorded per session.
      const batch = await resolveBatch({ o, record, G, worldSize, startedAtMs: t0, resumed, facts, tell });
      const { batchSize, levers, session } = batch;
      let { micro } = batch;
      const saver = recordSaver({ store, ownRecord, runId, identity, record, G, batchSize, session });
      const saveRecord = (): Promise<void> => saver.save();
      if (record === null || (batchSize !== null && record.batch_size === null && G === null) || session !== null) {
        await saveRecord();
      }

      // 5. Launch, watch, push.
      let resumeFrom = resumed.outcome === 'resume' ? resumed.resumeFrom : null;
      const resumedStep = resumed.outcome === 'resume' ? resumed.step : -1;
      const placeholdersNow = () =>
        micro === null
          ? { batchSize, outputDir: o.outputDir, resumeFrom, maxSteps: horizon }
          : {
              batchSize: micro,
              microBatchSize: micro,
              gradAccum: G! / (micro * worldSize),
              outputDir: o.outputDir,
              resumeFrom,
              maxSteps: horizon,
              levers,
            };
      const watcher = watchOutput({ o, used, settleMs, resumed, tell });
      const pushes = createSessionPushes({ o, store, runId, resumedStep, keepRemote, lease, watcher, facts, tell });

      if (o.signal.aborted) return { outcome: 'not-launched', run: runId };
      const resumedLine = resumed.outcome === 'resume' ? `resuming from step ${resumed.step}` : 'fresh start';
      say(`run ${runId}: ${resumedLine}; checkpoints in ${show(o.outputDir)} pushed to ${storeName}`);

      const nice = o.pushNice ?? 10;
      const stop = watchStop({ signal: o.signal, timeLimitMs: o.timeLimitMs ?? null, startedAtMs: t0 });
      const stepSeen = trackNewestStep();
      if (resumedStep >= 0) stepSeen.checkpoint(resumedStep);
      const memory = o.memory ? startMemoryWatch(o.memory, { stepNow: () => stepSeen.step, warn }) : null;
      const maxRetries = o.maxOomRetries ?? 3;
      let launch: LaunchEnd;
      // 5b. Launch; an out-of-memory failure steps m down and launches again from the newest complete checkpoint.
      for (;;) {
        const placeholders = placeholdersNow();
        const common = { o, lock, memory, stepSeen, watcher, pushes, stop, tell };
        const canStepDown =
          G !== null && micro !== null && facts.oomStepDowns.length < maxRetries && !!o.nextMicroBatchSize?.(micro);
        launch = await launchOnce({ ...common, placeholders, secrets, stopSignal, graceMs, pollMs, nice, canStepDown });
        const stopped = stop.reason !== null;
        const down = planStepDown({
          ...common,
          ...launch,
          stopped,
          micro,
          G,
          worldSize,
          maxRetries,
          resumeFrom,
          facts,
        });
        if (down === null) break;
        const to = down.stepDown.to;
        micro = to;
        session!.micro_batch_size = to;
        session!.grad_accum = G! / (to * worldSize);
        resumeFrom = down.resumeFrom;
        await o.onOomStepDown?.(down.stepDown);
        await saveRecord().catch((err: Error) => warn(`soup_run.json not updated with the step-down: ${err.message}`));
        if (o.signal.aborted || stop.reason !== null) break;
      }
      stop.clear();
      pushes.ending = true;
      facts.microBatchSize = micro;
      facts.gradAccum = micro === null ? null : G! / (micro * worldSize);
      if (memory) {
        facts.memory = memory.report();
        if (session !== null) {
          session.memory = facts.memory;
        }
      }
      if (session !== null)
        await saveRecord().catch((err: Error) =>
          warn(`soup_run.json not updated with the session's end: ${err.message}`),
        );
      const stopReason = stop.reason;
      const { end, exitAt } = launch;

      // 6. Whatever the exit: the newest complete checkpoint newer than the pointer is pushed first. A folder
      // with its marker counts once the trainer is gone (unless soup had to SIGKILL it); one without a
      // marker only if it had settled before the exit.
      await pushes.pushRest(exitAt, !end.killed);
      const { results } = pushes.queue;
      const pushedStep = results.length > 0 ? Math.max(...results.map((r) => r.step)) : null;
      // 7. Claim only what the evidence shows.
      const ends = { o, store, storeName, runId, end, stopReason, exitAt, pushedStep, resumedStep, horizon };
      return endSession({ ...ends, pushFailures: pushes.queue.failures, keepRemote, lease, watcher, tell });
    }
  }
}

/** The facts of a session that has done nothing yet. */
function emptyFacts(G: number | null, worldSize: number): SessionFacts {
  return {
    startStep: null,
    pushedSteps: [],
    batchSize: null,
    batchSource: null,
    globalBatchSize: G,
    microBatchSize: null,
    gradAccum: null,
    worldSize,
    previousSession: null,
    oomStepDowns: [],
    memory: null,
  };
}
