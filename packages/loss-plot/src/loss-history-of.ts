// The loss history and horizon of a parsed trainer_state.json (Hugging Face Trainer format).
import type { LossPoint } from './loss-plot';

/** What {@link lossHistoryOf} finds in a `trainer_state.json`. */
export interface LossHistory {
  /** The `log_history` entries that carry an integer `step` ([] when there is none). */
  history: LossPoint[];
  /** `max_steps`, the x axis's end; null when absent. */
  horizon: number | null;
}

/**
 * The `log_history` of a parsed `trainer_state.json` (entries without an integer `step` left out) and its
 * `max_steps`. Anything that is not such an object (null, a number, an array) has no history: a trainer's
 * state file is read as found, never trusted to be well formed.
 */
export function lossHistoryOf(trainerState: unknown): LossHistory {
  if (trainerState === null || typeof trainerState !== 'object' || Array.isArray(trainerState))
    return { history: [], horizon: null };
  const state = trainerState as { log_history?: unknown; max_steps?: unknown };
  const history = Array.isArray(state.log_history)
    ? state.log_history.filter(
        (e): e is LossPoint => e !== null && typeof e === 'object' && Number.isInteger((e as LossPoint).step),
      )
    : [];
  return { history, horizon: typeof state.max_steps === 'number' ? state.max_steps : null };
}
