// The evidence that a run reached its end: `global_step >= max_steps` from an HF-style
// trainer_state.json, or a horizon the user gave (--horizon, which also fills {max_steps}).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** What trainer_state.json says: the step reached and the run's horizon (each null when absent). */
export interface TrainerStateSteps {
  globalStep: number | null;
  maxSteps: number | null;
}

const int = (v: unknown): number | null => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : null);

/** Reads `<dir>/trainer_state.json` (`global_step` or `step`, `max_steps`); nulls when missing or unreadable. */
export function readTrainerState(dir: string): TrainerStateSteps {
  try {
    const s = JSON.parse(readFileSync(join(dir, 'trainer_state.json'), 'utf8')) as Record<string, unknown>;
    return { globalStep: int(s.global_step ?? s.step), maxSteps: int(s.max_steps) };
  } catch {
    return { globalStep: null, maxSteps: null };
  }
}

/** Whether a trainer that exited 0 finished its run, and why. */
export type HorizonVerdict =
  /** The step reached is at or past the horizon. */
  | { complete: true; step: number | null; horizon: number | null; evidence: 'horizon-reached' | 'trainer-done' }
  /** The horizon is known and not reached (or the step is unknown): a segment, not the end. */
  | { complete: false; step: number | null; horizon: number; evidence: 'horizon-not-reached' | 'step-unknown' };

/**
 * The complete-run rule for a trainer that exited 0 with no signal seen by soup: when a horizon is known
 * (`--horizon`, else `max_steps` in a trainer_state.json), the step reached (newest `global_step`, else the
 * newest checkpoint's step) must be at or past it; when no horizon is known, the trainer's own exit 0 is
 * the "done" (`trainer-done`).
 */
export function judgeHorizon(p: {
  states: TrainerStateSteps[];
  checkpointStep: number | null;
  horizon: number | null;
}): HorizonVerdict {
  const steps = p.states.map((s) => s.globalStep).filter((v): v is number => v !== null);
  const fromState = steps.length > 0 ? Math.max(...steps) : null;
  const step = fromState ?? p.checkpointStep;
  const maxes = p.states.map((s) => s.maxSteps).filter((v): v is number => v !== null);
  const horizon = p.horizon ?? (maxes.length > 0 ? Math.max(...maxes) : null);
  if (horizon === null) return { complete: true, step, horizon: null, evidence: 'trainer-done' };
  if (step === null) return { complete: false, step: null, horizon, evidence: 'step-unknown' };
  return step >= horizon
    ? { complete: true, step, horizon, evidence: 'horizon-reached' }
    : { complete: false, step, horizon, evidence: 'horizon-not-reached' };
}
