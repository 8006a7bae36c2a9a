// The session's end: claim only what the evidence shows (trainer failed, segment saved, or complete with final/).
import { pushFinal, type CheckpointStore, type StoreLease } from '@soup/hub-ckpt';
import { constants } from 'node:os';
import { describeSegmentSaved } from './describe-segment-saved';
import { everyPushFailed, thisRunsEndState, type PushFailure } from './end-evidence';
import { judgeHorizon } from './horizon';
import { stageFinal } from './stage-final';
import type { SessionOptions, SuperviseOutcome } from './supervise-options';
import { trainerErrorLine, type TrainerExit } from './trainer-child';
import { globToRegExp, type CheckpointWatcher } from './watch-checkpoints';
import type { Tell } from './_tell';

/**
 * The outcome once the pushes are done: a failed trainer; a session stopped early (`stopReason`); an exit 0 before
 * the horizon; else complete, with final/ pushed and a terminal pointer.
 */
export async function endSession(p: {
  o: SessionOptions;
  store: CheckpointStore;
  storeName: string;
  runId: string;
  end: TrainerExit & { killed: boolean };
  stopReason: string | null;
  exitAt: number;
  /** The newest step this session pushed (null: none). */
  pushedStep: number | null;
  /** This session's failed pushes. @default none */
  pushFailures?: readonly PushFailure[];
  resumedStep: number;
  horizon: number | null;
  keepRemote: number;
  lease: StoreLease | null;
  watcher: CheckpointWatcher;
  tell: Tell;
}): Promise<SuperviseOutcome> {
  const { o, store, storeName, runId, end, stopReason, exitAt, pushedStep, resumedStep, horizon, watcher } = p;
  const { say, warn, show } = p.tell;
  const stoppedEarly = stopReason !== null;
  const pointerStep = pushedStep ?? (resumedStep >= 0 ? resumedStep : null);

  if (!stoppedEarly && end.code !== 0) {
    const code = end.code ?? 128 + (end.signal ? (constants.signals[end.signal] ?? 0) : 0);
    const why = trainerErrorLine(end.stderrTail);
    const saved =
      pushedStep !== null
        ? `pushed step ${pushedStep}; the store points at it`
        : pointerStep !== null
          ? `nothing new was pushed; the store still points at step ${pointerStep}`
          : 'no checkpoint was pushed';
    const message =
      `the trainer failed with ` +
      `${end.code !== null ? `exit code ${end.code}` : `signal ${end.signal}`}${why ? `: ${why}` : ''}; ` +
      `${saved}; no final pushed`;
    return { outcome: 'trainer-failed', run: runId, exitCode: code, trainerError: why, pushedStep, message };
  }

  if (stoppedEarly) {
    say(describeSegmentSaved(stopReason!, pointerStep, storeName), 'outcome');
    return {
      outcome: 'segment-saved',
      run: runId,
      step: pointerStep,
      stopReason: stopReason!,
      trainerExit: end.code,
      trainerKilled: end.killed,
      horizon: null,
    };
  }

  // 7. Exit 0 with no signal seen: complete only on this run's evidence (the horizon reached when one is known, or
  // a stop by design), and only when not every push of the session failed.
  watcher.scan(Date.now());
  const newest = watcher.newestComplete({ asOfMs: exitAt, trainerExited: true })?.checkpoint ?? null;
  const { states, doneMarker } = thisRunsEndState({
    outputDir: o.outputDir,
    finalDir: o.finalDir ?? null,
    newest,
    watcher,
  });
  const verdict = judgeHorizon({ states, checkpointStep: newest?.step ?? null, horizon, doneMarker });
  if (!verdict.complete) {
    const reached = verdict.step === null ? 'at an unknown step' : `at step ${verdict.step}`;
    const early = `the trainer exited 0 ${reached}, before its horizon of ${verdict.horizon} steps`;
    const reason = o.stopBeforeHorizon ?? early;
    // A stop by design (the caller's reason) is no early exit: no warning.
    if (!o.stopBeforeHorizon)
      warn(
        `${early}: not complete, no final/ and no terminal pointer (the horizon comes from ` +
          `${horizon !== null ? '--horizon' : "trainer_state.json's max_steps"})`,
        'early-exit',
      );
    say(describeSegmentSaved(reason, pointerStep, storeName), 'outcome');
    return {
      outcome: 'segment-saved',
      run: runId,
      step: pointerStep,
      stopReason: reason,
      trainerExit: 0,
      trainerKilled: false,
      horizon: { step: verdict.step, horizon: verdict.horizon },
    };
  }
  const refused = everyPushFailed(p.pushFailures ?? [], pushedStep);
  if (refused !== null) {
    warn(refused.line);
    throw refused.error;
  }
  const glob = globToRegExp(o.checkpointGlob ?? 'checkpoint-*');
  const fin = stageFinal({
    outputDir: o.outputDir,
    finalDir: o.finalDir ?? null,
    newest,
    isCheckpoint: (n) => glob.test(n),
    thisRun: (n) => watcher.isThisRunsFile(n),
  });
  try {
    const step = Math.max(pushedStep ?? -1, resumedStep, fin.step ?? -1, verdict.step ?? -1, 0);
    const res = await pushFinal({
      store,
      step,
      dir: fin.dir,
      run: runId,
      keepRemote: p.keepRemote,
      ...(p.lease ? { lease: p.lease } : {}),
      ...(o.squashHistory === true ? { squashHistory: true } : {}),
    });
    say(
      `run complete: pushed final/ (${res.fileCount} file${res.fileCount === 1 ? '' : 's'} from ` +
        `${show(fin.source)}, step ${step}, verified) with a terminal pointer`,
      'outcome',
    );
    return {
      outcome: 'complete',
      run: runId,
      step,
      pathInRepo: res.pathInRepo,
      launched: true,
      evidence: verdict.evidence,
    };
  } finally {
    fin.cleanup();
  }
}
