// The evidence that a run reached its end: `global_step >= max_steps` from an HF-style
// trainer_state.json, or a horizon the user gave (--horizon, which also fills {max_steps}); or a trainer that
// stopped by design before it (HF's EarlyStoppingCallback: `should_training_stop`; or its own done marker).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** What trainer_state.json says: the step reached and the run's horizon (each null when absent). */
export interface TrainerStateSteps {
  globalStep: number | null;
  maxSteps: number | null;
  /**
   * The trainer stopped early by design: `should_training_stop: true` (at the top or in the TrainerControl HF saves
   * in `stateful_callbacks`) with HF's EarlyStoppingCallback state showing it fired. @default false
   */
  stopped?: boolean;
}

/** The file a trainer may write at the top of {output_dir} to say its run is done whatever its step. */
export const DONE_MARKER = 'soup_done';

/**
 * Whether a trainer_state.json says the trainer stopped early by design (see {@link TrainerStateSteps.stopped}):
 * `should_training_stop` AND HF's EarlyStoppingCallback state showing it fired (its patience counter reached its
 * patience). `should_training_stop` alone is not enough: a trainer's own SIGTERM handler sets the same flag to save
 * and leave, and a session that ended that way must not read as a finished run. Other trainers write the done
 * marker instead.
 */
function saysStop(s: Record<string, unknown>): boolean {
  const callbacks = s.stateful_callbacks as Record<string, unknown> | undefined;
  const control = callbacks?.TrainerControl as { args?: Record<string, unknown> } | undefined;
  if (s.should_training_stop !== true && control?.args?.should_training_stop !== true) return false;
  const early = callbacks?.EarlyStoppingCallback as
    | { args?: Record<string, unknown>; attributes?: Record<string, unknown> }
    | undefined;
  const patience = early?.args?.early_stopping_patience;
  const counter = early?.attributes?.early_stopping_patience_counter;
  return typeof patience === 'number' && typeof counter === 'number' && counter >= patience;
}

const int = (v: unknown): number | null => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : null);

/** Reads `<dir>/trainer_state.json` (`global_step` or `step`, `max_steps`); nulls when missing or unreadable. */
export function readTrainerState(dir: string): TrainerStateSteps {
  try {
    const s = JSON.parse(readFileSync(join(dir, 'trainer_state.json'), 'utf8')) as Record<string, unknown>;
    return { globalStep: int(s.global_step ?? s.step), maxSteps: int(s.max_steps), stopped: saysStop(s) };
  } catch {
    return { globalStep: null, maxSteps: null, stopped: false };
  }
}

/** Whether a trainer that exited 0 finished its run, and why. */
export type HorizonVerdict =
  /** The step reached is at or past the horizon. */
  | {
      complete: true;
      step: number | null;
      horizon: number | null;
      evidence: 'horizon-reached' | 'trainer-done' | 'trainer-stopped' | 'done-marker';
    }
  /** The horizon is known and not reached (or the step is unknown): a segment, not the end. */
  | { complete: false; step: number | null; horizon: number; evidence: 'horizon-not-reached' | 'step-unknown' };

/**
 * The complete-run rule for a trainer that exited 0 with no signal seen by soup: when a horizon is known
 * (`--horizon`, else `max_steps` in a trainer_state.json), the step reached (newest `global_step`, else the
 * newest checkpoint's step) must be at or past it; when no horizon is known, the trainer's own exit 0 is
 * the "done" (`trainer-done`). Before the horizon, a trainer that stopped by design is done too: the newest
 * state (one at the highest `global_step`) says `should_training_stop` (`trainer-stopped`), or the trainer
 * wrote its done marker (`done-marker`, {@link DONE_MARKER}). Pass only this run's states and marker.
 */
export function judgeHorizon(p: {
  states: TrainerStateSteps[];
  checkpointStep: number | null;
  horizon: number | null;
  /** This run wrote {@link DONE_MARKER}. @default false */
  doneMarker?: boolean;
}): HorizonVerdict {
  const steps = p.states.map((s) => s.globalStep).filter((v): v is number => v !== null);
  const fromState = steps.length > 0 ? Math.max(...steps) : null;
  const step = fromState ?? p.checkpointStep;
  const maxes = p.states.map((s) => s.maxSteps).filter((v): v is number => v !== null);
  const horizon = p.horizon ?? (maxes.length > 0 ? Math.max(...maxes) : null);
  if (horizon === null) return { complete: true, step, horizon: null, evidence: 'trainer-done' };
  if (step !== null && step >= horizon) return { complete: true, step, horizon, evidence: 'horizon-reached' };
  if (p.doneMarker === true) return { complete: true, step, horizon, evidence: 'done-marker' };
  if (step === null) return { complete: false, step: null, horizon, evidence: 'step-unknown' };
  // The newest state: any of those at the highest global_step (the top-level one and its checkpoint's).
  if (p.states.some((s) => s.globalStep === fromState && s.stopped === true))
    return { complete: true, step, horizon, evidence: 'trainer-stopped' };
  return { complete: false, step, horizon, evidence: 'horizon-not-reached' };
}
