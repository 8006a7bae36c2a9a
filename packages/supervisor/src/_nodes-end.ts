// The session's end across nodes: node 0 judges the run (complete only when every node's trainer exited 0), writes
// the verdict every follower adopts, and with --requeue asks SLURM to run the job again once its push is verified.
import type { PushFailure } from './end-evidence';
import { requeueSlurmJob } from './slurm-requeue';
import type { SuperviseOutcome } from './supervise-options';
import type { NodeSession } from './_node-session';
import { endSession } from './_session-end';
import type { Tell } from './_tell';

type EndArgs = Parameters<typeof endSession>[0];

/** This node's outcome: node 0's from {@link endSession} with the followers' exits; a follower's from node 0's. */
export async function finishSession(
  p: EndArgs & { nodes: NodeSession; graceMs: number; requeue: boolean },
): Promise<SuperviseOutcome> {
  const { nodes, end, stopReason, tell } = p;
  if (!nodes.leader) return followerEnd(p);
  const short = nodes.followersShortfall();
  let outcome: SuperviseOutcome;
  if (short !== null && stopReason === null && end.code === 0 && short.failedCode !== null) {
    const saved = p.pushedStep === null ? 'nothing new was pushed' : `pushed step ${p.pushedStep}`;
    const message = `${short.reason}; ${saved}; no final pushed`;
    outcome = {
      outcome: 'trainer-failed',
      run: p.runId,
      exitCode: short.failedCode,
      trainerError: short.reason,
      pushedStep: p.pushedStep,
      message,
    };
  } else {
    const notAll = short !== null && end.code === 0 ? short.reason : null;
    outcome = await endSession({ ...p, stopReason: stopReason ?? notAll });
  }
  nodes.publishVerdict(verdictOf(outcome));
  if (p.requeue && outcome.outcome === 'segment-saved')
    await requeue(p.o.env, p.pushFailures ?? [], p.pushedStep, tell);
  return outcome;
}

function verdictOf(o: SuperviseOutcome): { outcome: string; step: number | null; reason: string | null } {
  if (o.outcome === 'complete') return { outcome: o.outcome, step: o.step, reason: null };
  if (o.outcome === 'segment-saved') return { outcome: o.outcome, step: o.step, reason: o.stopReason };
  if (o.outcome === 'trainer-failed') return { outcome: o.outcome, step: o.pushedStep, reason: o.message };
  return { outcome: o.outcome, step: null, reason: null };
}

/** A follower ends as node 0 judged the run; its own trainer's failure is its own. */
async function followerEnd(p: EndArgs & { nodes: NodeSession; graceMs: number }): Promise<SuperviseOutcome> {
  const { end, stopReason, nodes } = p;
  const { say, warn } = p.tell;
  if (stopReason === null && end.code !== 0) return endSession(p);
  const waitMs = 2 * p.graceMs + 60_000;
  const v = await nodes.awaitVerdict(waitMs);
  if (v?.outcome === 'complete') {
    say(`node 0 judged the run complete at step ${v.step}`);
    return {
      outcome: 'complete',
      run: p.runId,
      step: v.step ?? 0,
      pathInRepo: 'final',
      launched: true,
      evidence: 'trainer-done',
    };
  }
  const reason = v === null ? `node 0's verdict is unknown (none within ${waitMs} ms)` : (v.reason ?? v.outcome);
  if (v === null) warn(reason);
  const step = v?.step ?? (p.resumedStep >= 0 ? p.resumedStep : null);
  say(`segment saved by node 0 (${stopReason ?? reason}): the store points at step ${step ?? 'none'}`, 'outcome');
  return {
    outcome: 'segment-saved',
    run: p.runId,
    step,
    stopReason: stopReason ?? reason,
    trainerExit: end.code,
    trainerKilled: end.killed,
    horizon: null,
  };
}

/** `scontrol requeue $SLURM_JOB_ID`, once the session end's push is verified; says what it did and the answer. */
async function requeue(
  env: NodeJS.ProcessEnv,
  failures: readonly PushFailure[],
  pushedStep: number | null,
  tell: Tell,
): Promise<void> {
  const jobId = env.SLURM_JOB_ID ?? '';
  const unpushed = failures.filter((f) => f.job.step > (pushedStep ?? -1));
  if (unpushed.length > 0) {
    tell.warn(`--requeue: not requeued: the push of step ${unpushed.at(-1)!.job.step} failed (run it again by hand)`);
    return;
  }
  const r = await requeueSlurmJob({ jobId, env });
  const answer = r.code === 0 ? 'exit 0' : r.code === null ? 'it did not finish' : `exit ${r.code}`;
  const line = `requeued SLURM job ${jobId}: ${r.argv.join(' ')} (${answer}${r.output ? `: ${r.output}` : ''})`;
  if (r.code === 0) tell.say(line);
  else tell.warn(line.replace('requeued', 'requeue failed for'));
}
