// The facts of a session's result that every trainer's session has, from supervise()'s outcome.
import type { CheckpointStore } from '@soup/hub-ckpt';
import { emptySessionResult, microBatchFields, type SessionPeakReport, type SessionResult } from './session-result';
import type { SessionFacts, SuperviseOutcome } from './supervise-options';

/** The result's facts every session has (run, store, status, pushes, micro-batch, peak); a caller adds its own. */
export function sessionResultOf(
  r: SuperviseOutcome & SessionFacts,
  p: {
    store: CheckpointStore;
    status: SessionResult['status'];
    exitCode: number;
    startedAtMs: number;
    memory: SessionPeakReport | null;
  },
): SessionResult {
  return {
    ...emptySessionResult({
      run: r.run,
      store: p.store.description,
      status: p.status,
      exit_code: p.exitCode,
      elapsedMs: Date.now() - p.startedAtMs,
    }),
    pushed_steps: r.pushedSteps,
    ...microBatchFields(r),
    memory: p.memory,
  };
}
