// A local checkpoint folder about to be pushed, and its step: the step given, else its trainer's.
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { InvalidCheckpointOptionError } from './errors';
import { localCheckpointStep } from './local-checkpoint-step';

/** Options of {@link localCheckpoint}. */
export interface LocalCheckpointOptions {
  /** The folder as the caller named it (a refusal names it so), resolved against `cwd`. */
  dir: string;
  /** The step, when the caller was told it; else `trainer_state.json`'s ({@link localCheckpointStep}). */
  step?: number | undefined;
  /** The folder `dir` is relative to. @default process.cwd() */
  cwd?: string;
  /** How the refusal of a folder with no step says to pass one (soup: `--step N`). @default 'its step' */
  stepFlag?: string;
}

/**
 * The absolute folder and its step: `step` when given, else what its `trainer_state.json` says. Refuses a path that
 * is not a directory, and a folder whose step is neither given nor recorded (`InvalidCheckpointOptionError`, `field`
 * `dir` or `step`), before anything is read from it.
 */
export function localCheckpoint(opts: LocalCheckpointOptions): { dir: string; step: number } {
  const dir = resolve(opts.cwd ?? process.cwd(), opts.dir);
  let isDir = false;
  try {
    isDir = statSync(dir).isDirectory();
  } catch {
    // no such folder, or not one this user can see
  }
  if (!isDir)
    throw new InvalidCheckpointOptionError(`${opts.dir} is not a checkpoint folder (no such directory)`, {
      field: 'dir',
    });
  const step = opts.step ?? localCheckpointStep({ dir });
  if (step === null) {
    const pass = opts.stepFlag ?? 'its step';
    throw new InvalidCheckpointOptionError(`${opts.dir} has no trainer_state.json with a global_step: pass ${pass}`, {
      field: 'step',
    });
  }
  return { dir, step };
}
