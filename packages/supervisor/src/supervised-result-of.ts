// The result of a session around a trainer the caller did not write (`soup run`): each of supervise()'s outcomes
// as its status, its exit code, the steps it started from and ended at, and how the trainer ended.
import type { CheckpointStore } from '@soup/hub-ckpt';
import { secondsOf, segmentReasonOf, type SessionPeakReport, type SessionResult } from './session-result';
import { sessionResultOf } from './session-result-of';
import type { SessionFacts, SuperviseOutcome } from './supervise-options';

/** The caller's exit codes: the session engine words the outcome, the caller owns what its process exits with. */
export interface SessionExitCodes {
  /** Finished, or already complete. */
  ok: number;
  /** Segment saved: run the same command again. */
  segmentSaved: number;
  /** Interrupted before the trainer was launched. */
  interrupted: number;
}

/**
 * The whole result of one outcome: `finished` (or `complete` when the store already held final/ and nothing ran),
 * `segment` with why and when the session ended, `failed` with the trainer's own exit code (or `interrupted` when
 * nothing was launched). `trainer` says how the trainer ended, null when none ran.
 */
export function supervisedResultOf(
  r: SuperviseOutcome & SessionFacts,
  p: { store: CheckpointStore; startedAtMs: number; memory: SessionPeakReport | null; exitCodes: SessionExitCodes },
): SessionResult {
  const { store, startedAtMs, memory, exitCodes } = p;
  const result = (status: SessionResult['status'], exitCode: number, extra: Partial<SessionResult>): SessionResult => ({
    ...sessionResultOf(r, { store, status, exitCode, startedAtMs, memory }),
    start_step: r.startStep ?? 0,
    batch_size: r.batchSize,
    batch_source: r.batchSource,
    ...extra,
  });
  switch (r.outcome) {
    case 'complete':
      return result(r.launched ? 'finished' : 'complete', exitCodes.ok, {
        final_step: r.step,
        final_pushed: r.launched,
        ...(r.launched ? {} : { start_step: r.step }),
        trainer: r.launched ? { exit_code: 0, signal: null, killed: false, error: null } : null,
      });
    case 'not-launched':
      return result('failed', exitCodes.interrupted, {});
    case 'segment-saved':
      return result('segment', exitCodes.segmentSaved, {
        final_step: r.step,
        horizon: r.horizon?.horizon ?? null,
        session_end: {
          reason: segmentReasonOf(r.stopReason),
          after_s: secondsOf(Date.now() - startedAtMs),
          saved_step: r.pushedSteps.at(-1) ?? null,
        },
        trainer: { exit_code: r.trainerExit, signal: null, killed: r.trainerKilled, error: null },
      });
    case 'trainer-failed':
      return result('failed', r.exitCode, {
        final_step: r.pushedStep ?? r.startStep ?? null,
        trainer: { exit_code: r.exitCode, signal: null, killed: false, error: r.trainerError },
      });
  }
}
