// What a session of soup's own trainer did: the supervisor's facts (SessionTrack) and the child's reports,
// the facts soup train's closing lines and its result are made of.
import type { SegmentPlan, StoreError } from '@soup/hub-ckpt';
import type { TrainReport } from '@soup/onnx-train';
import {
  readMicroSessions,
  type MicroSession,
  type SessionFacts,
  type SessionPeakReport,
  type SessionTrack,
  type SuperviseOutcome,
} from '@soup/supervisor';
import type { PreparedRun } from './prepare-run';
import { readResumedState } from './trainer-options';

/** What the session did (the supervisor's events fill SessionTrack, the child's reports the rest). */
export interface TrainFacts extends SessionTrack {
  /** The supervisor's outcome; null when the push of final/ failed on an unreachable store (`finalError`). */
  r: (SuperviseOutcome & SessionFacts) | null;
  /** The store could not be reached for final/ (after the retries), the run trained to its horizon. */
  finalError: StoreError | null;
  prepared: PreparedRun | null;
  plan: SegmentPlan | null;
  startStep: number;
  /** The newest step the child completed (startStep when none). */
  lastStep: number;
  tokensConsumed: number;
  initialLoss: number | null;
  lastLoss: number | null;
  valLoss: number | null;
  stepsRun: number;
  trainMs: number;
  memory: SessionPeakReport | null;
  /** Time from launch to the child's first report (its start-up, ready to train), ms; null when it never got there. */
  startupMs: number | null;
  /** The trainer exited 0 at the horizon, no stop seen (final/ is pushed next). */
  atHorizon: boolean;
  /** The supervisor's closing sentence (its event with topic `outcome`: segment saved, run complete); null: none. */
  closing: string | null;
}

/** A session before anything happened. */
export function emptyTrainFacts(): TrainFacts {
  return {
    r: null,
    finalError: null,
    pushed: [],
    prepared: null,
    plan: null,
    startStep: 0,
    lastStep: 0,
    savedStep: null,
    tokensConsumed: 0,
    initialLoss: null,
    lastLoss: null,
    valLoss: null,
    stepsRun: 0,
    trainMs: 0,
    ended: null,
    unpushed: [],
    memory: null,
    startupMs: null,
    atHorizon: false,
    closing: null,
  };
}

/** Takes the facts of one child report into `s` (`launchedAtMs`: when the supervisor launched the child). */
export function applyTrainReport(s: TrainFacts, r: TrainReport, launchedAtMs: number | null): void {
  if (r.event === 'ready') {
    if (launchedAtMs !== null && s.startupMs === null) s.startupMs = Date.now() - launchedAtMs;
  } else if (r.event === 'step') {
    s.stepsRun += 1;
    s.trainMs += r.ms;
    s.lastStep = r.step;
    s.tokensConsumed = r.tokensConsumed;
    s.initialLoss ??= r.loss;
    s.lastLoss = r.loss;
  } else if (r.event === 'validation') {
    s.valLoss = r.loss;
  }
}

/**
 * Where the session starts: the resumed checkpoint's step, tokens and loss taken into `s` (a fresh run starts
 * at 0), and the sessions the checkpoint records (none for a fresh run).
 */
export function resumeTrainFacts(
  s: TrainFacts,
  resumed: { resumeFrom: string | null; step: number | null },
): MicroSession[] {
  s.startStep = resumed.step ?? 0;
  s.lastStep = s.startStep;
  if (!resumed.resumeFrom) return [];
  const st = readResumedState(resumed.resumeFrom);
  s.tokensConsumed = st.tokensConsumed;
  s.lastLoss = st.lastLoss;
  return readMicroSessions(resumed.resumeFrom);
}
