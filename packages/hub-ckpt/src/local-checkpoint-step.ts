// The step of a checkpoint folder on the local disk, as its trainer recorded it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Options of {@link localCheckpointStep}. */
export interface LocalCheckpointStepOptions {
  /** The checkpoint folder (`checkpoint-<step>/`). */
  dir: string;
}

/**
 * `trainer_state.json`'s `global_step` (Hugging Face Trainer) or `step` (soup), when it is an integer ≥ 0;
 * null when the file is missing, unreadable or has neither: the caller must then be told the step.
 * The folder's name is not trusted: a renamed folder keeps its trainer's step.
 */
export function localCheckpointStep(opts: LocalCheckpointStepOptions): number | null {
  try {
    const state = JSON.parse(readFileSync(join(opts.dir, 'trainer_state.json'), 'utf8')) as {
      step?: unknown;
      global_step?: unknown;
    } | null;
    const s = state?.global_step ?? state?.step;
    if (typeof s === 'number' && Number.isInteger(s) && s >= 0) return s;
  } catch {
    // no readable trainer_state.json
  }
  return null;
}
