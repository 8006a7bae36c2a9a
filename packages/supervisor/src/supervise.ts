// supervise(): run the user's own trainer for one session: resume from the store, launch, push this run's
// complete checkpoints while it trains, and at its end claim only what the evidence shows.
import { resolve } from 'node:path';
import { acquireLease, type StoreLease } from '@soup/hub-ckpt';
import { startMemoryWatch } from './memory-watch';
import { trackNewestStep } from './newest-step';
import { identityOf, readRunRecord, supervisedFingerprint } from './run-identity';
import type { SessionFacts, SessionOptions, SuperviseOptions, SuperviseOutcome } from './supervise-options';
import { resolveBatch } from './_batch-size';
import { agreeAcrossNodes } from './agree-across-nodes';
import { checkOptions } from './_check-options';
import { leaseOptionsOf } from './_lease-options';
import { claimRun } from './_claim-run';
import { followResume } from './_follow-resume';
import { launchOnce, type LaunchEnd } from './_launch';
import { followerStore, joinNodes, type NodeSession } from './_node-session';
import { finishSession } from './_nodes-end';
import type { ResumeNote } from './_nodes-files';
import { completeInStore, pullResume } from './_pull-resume';
import { recordHorizonChange } from './_record-horizon';
import type { SupervisedResume } from './resume-supervised';
import { recordSaver } from './_record-saver';
import { createSessionPushes } from './_session-pushes';
import { watchStop } from './_session-stop';
import { planStepDown } from './_step-down';
import { createTell } from './_tell';
import { lockOutput, watchOutput } from './_watch-output';

export {
  STOP_SIGNALS,
  type SessionFacts,
  type SuperviseEvent,
  type SuperviseTopic,
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
export async function supervise(options: SuperviseOptions): Promise<SuperviseOutcome & SessionFacts> {
  // Over 150 lines: the session's phases (claim, resume, launch, pushes, end) share its store, run id and node session.
  const o = sessionOptionsOf(options);
  const t0 = o.startedAtMs ?? Date.now();
  const tell = createTell(o);
  const { say, warn, show } = tell;
  const { stopSignal, used, horizon, G, worldSize, role, stepRegex } = checkOptions(o);
  const settleMs = o.settleMs ?? 10_000;
  const graceMs = o.graceMs ?? 120_000;
  const pollMs = o.pollMs ?? 1000;
  const keepRemote = o.keepRemote ?? 3;
  const storeName = o.storeName ?? o.store.description;
  // Several nodes: node 0 leads; a follower reads the store through a view that refuses every write.
  const joined = await joinNodes({ o, role, startedAtMs: t0, tell });
  if (joined === null) return { outcome: 'not-launched', run: '', ...emptyFacts(G, worldSize) };
  const nodes: NodeSession = joined;
  const store = nodes.leader ? o.store : followerStore(o.store, role.rank);
  const agreeing = agreeingOn(o, nodes, G, worldSize, (line) => say(line, 'batch'));

  // 1. Identity and stale guard.
  const secrets = o.secrets ?? [];
  const identity = identityOf(o.argv, o.fingerprintFiles ?? [], o.cwd, secrets, G);
  const fingerprint = o.runId ?? supervisedFingerprint(identity);
  const ownRecord = (o.runId ?? null) === null;
  // One writer per store: refused here (LeaseHeldError names the holder), before anything is written or launched.
  let lease: StoreLease | null = null;
  try {
    if (o.leaseTtlMs !== null && nodes.leader)
      lease = await acquireLease({ store, run: fingerprint, ...leaseOptionsOf(o), logger: { warn, info: say } });
    const r = await underLease();
    if (r.outcome === 'not-launched') nodes.publishVerdict({ outcome: r.outcome, step: null, reason: 'not launched' });
    return r;
  } catch (err) {
    nodes.publishVerdict({ outcome: 'error', step: null, reason: (err as Error).message });
    throw err;
  } finally {
    await lease?.release();
  }

  async function underLease(): Promise<SuperviseOutcome & SessionFacts> {
    // Over 150 lines: the session's phases share its store view, run id, record, lock and node session.
    const force = o.resume === 'force';
    const claimed = nodes.leader
      ? await claimRun({ store, storeName, fingerprint, identity, ownRecord, resume: o.resume, tell })
      : { record: ownRecord ? await readRunRecord(store) : null, runId: fingerprint };
    let { record } = claimed;
    let { runId } = claimed;
    const note = nodes.leader ? null : await nodes.awaitResume(o.signal);
    if (!nodes.leader && note === null) return { outcome: 'not-launched', run: runId, ...emptyFacts(G, worldSize) };

    // 2. One supervisor per output folder (a follower sharing node 0's folder works under node 0's lock).
    const lock =
      note?.output_dir === o.outputDir ? { path: '', setTrainer() {}, release() {} } : lockOutput(o.outputDir, tell);
    const facts = emptyFacts(G, worldSize);
    try {
      return { ...(await supervised()), ...facts };
    } finally {
      lock.release();
    }

    // The session loop: resume, batch, launch (again after each out-of-memory step-down), push, end.
    async function supervised(): Promise<SuperviseOutcome> {
      // 3. Resume.
      const pulled = note
        ? await followResume({ o, note, store, facts, tell })
        : await pullResume({ o, store, storeName, runId, force, facts, tell });
      const { resumed } = pulled;
      runId = pulled.runId;
      nodes.publishResume(resumeNoteOf(resumed, runId, o.outputDir));
      if (resumed.outcome === 'complete') return completeInStore(resumed, runId, storeName, tell);
      if (resumed.outcome === 'resume' && nodes.leader) {
        const { dir, step } = resumed;
        record = await recordHorizonChange({ store, runId, identity, record, horizon, dir, step, tell });
      }

      // 4. Batch size; with a global batch, this device's m (cache, then probe), G kept, recorded per session.
      const batch = await resolveBatch({ o: agreeing, record, G, worldSize, startedAtMs: t0, resumed, facts, tell });
      const { batchSize, levers, session } = batch;
      let { micro } = batch;
      const saver = recordSaver({
        store,
        ownRecord: ownRecord && nodes.leader,
        runId,
        identity,
        record,
        G,
        batchSize,
        session,
      });
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
      const watcher = watchOutput({ o, stepRegex, used, settleMs, resumed, tell });
      const pushable = nodes.pushable(watcher);
      const pushes = createSessionPushes({
        o,
        store,
        runId,
        resumedStep,
        keepRemote,
        lease,
        watcher: pushable,
        facts,
        tell,
        follower: !nodes.leader,
      });

      if (o.signal.aborted) return { outcome: 'not-launched', run: runId };
      const resumedLine = resumed.outcome === 'resume' ? `resuming from step ${resumed.step}` : 'fresh start';
      const pushedBy = nodes.leader ? `pushed to ${storeName}` : 'node 0 pushes';
      say(`run ${runId}: ${resumedLine}; checkpoints in ${show(o.outputDir)} ${pushedBy}`, 'run');

      const nice = o.pushNice ?? 10;
      const stop = watchStop({ signal: o.signal, timeLimitMs: o.timeLimitMs ?? null, startedAtMs: t0 });
      const unwatchNodes = nodes.watchEnds(stop);
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
      unwatchNodes();
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
      await nodes.exited({ watcher, end, exitAt, stopping: stopReason !== null, reached: stepSeen.step }, graceMs);

      // 6. Whatever the exit: the newest complete checkpoint newer than the pointer is pushed first. A folder
      // with its marker counts once the trainer is gone (unless soup had to SIGKILL it); one without a
      // marker only if it had settled before the exit.
      await pushes.pushRest(exitAt, !end.killed);
      const { results } = pushes.queue;
      const pushedStep = results.length > 0 ? Math.max(...results.map((r) => r.step)) : null;
      // 7. Claim only what the evidence shows.
      const ends = { o, store, storeName, runId, end, stopReason, exitAt, pushedStep, resumedStep, horizon };
      const more = { nodes, graceMs, requeue: o.requeue === true };
      return finishSession({ ...ends, pushFailures: pushes.queue.failures, keepRemote, lease, watcher, tell, ...more });
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

/** What node 0 tells the followers it resumed from. */
function resumeNoteOf(r: SupervisedResume, run: string, outputDir: string): ResumeNote {
  const base = { run, output_dir: outputDir, complete: r.outcome === 'complete' };
  if (r.outcome === 'fresh') return { ...base, step: null, path_in_repo: null, resume_from: null, dir: null };
  if (r.outcome === 'complete')
    return { ...base, step: r.step, path_in_repo: r.pathInRepo, resume_from: null, dir: null };
  return { ...base, step: r.step, path_in_repo: r.pathInRepo, resume_from: r.resumeFrom, dir: r.dir };
}

/** A node's probe may take minutes: the nodes wait this long for each other's micro-batch answers. */
const MICRO_AGREEMENT_TIMEOUT_MS = 600_000;

/** Several nodes with a global batch: every node trains the smallest micro-batch any node's device fits. */
function agreeingOn(
  o: SessionOptions,
  nodes: NodeSession,
  G: number | null,
  worldSize: number,
  say: (line: string) => void,
): SessionOptions {
  if (nodes.dir === null || G === null || o.resolveMicroBatchSize === undefined) return o;
  const resolve = agreeAcrossNodes({
    resolve: o.resolveMicroBatchSize,
    nodes: { rank: nodes.role.rank, count: nodes.role.count, dir: nodes.dir },
    budgetBytes: o.memory?.budgetBytes ?? null,
    globalBatchSize: G,
    worldSize,
    say,
    timeoutMs: MICRO_AGREEMENT_TIMEOUT_MS,
  });
  return { ...o, resolveMicroBatchSize: resolve };
}

/** The defaults a caller may leave out: this process's folder and environment, and no signal of its own. */
function sessionOptionsOf(o: SuperviseOptions): SessionOptions {
  const cwd = o.cwd ?? process.cwd();
  return {
    ...o,
    cwd,
    env: o.env ?? process.env,
    signal: o.signal ?? new AbortController().signal,
    outputDir: resolve(cwd, o.outputDir),
  };
}
