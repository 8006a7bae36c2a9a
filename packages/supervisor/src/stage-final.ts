// What `soup run` pushes as final/: --final <dir>, else this run's files at the top of {output_dir} (hard-linked
// into a scratch folder; files an earlier run left there unchanged are not this run's), else the newest complete
// checkpoint of this run. Whatever it is must hold model weights by content, or no terminal pointer is written.
import { localCheckpointStep } from '@soup/hub-ckpt';
import { copyFileSync, linkSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { SupervisorUsageError } from './errors';
import { filesUnder, modelWeightFiles, weightsFormatOf } from './model-weights';
import type { WatchedCheckpoint } from './watch-checkpoints';

/** A folder ready for pushFinal, and how to clean it up. */
export interface StagedFinal {
  dir: string;
  /** What the user would call it (the folder the files came from). */
  source: string;
  /** Step from its trainer_state.json (`global_step` or `step`), or null. */
  step: number | null;
  cleanup(): void;
}

/** File names that usually hold model weights; what decides is their content (see {@link modelWeightFiles}). */
export const WEIGHT_FILE: RegExp = /\.(safetensors|bin|pt|pth|ckpt)$/i;

/** Whether a folder holds model weights by content, at any depth (see {@link weightsFormatOf}). */
export function holdsWeights(dir: string): boolean {
  return modelWeightFiles(dir).length > 0;
}

/** Throws unless `path` (a folder, or one file checkpoint) holds model weights; the message names what it found. */
function refuseWithoutWeights(path: string, what: string): void {
  const oneFile = isFile(path);
  if (oneFile ? weightsFormatOf(path, basename(path)) !== null : holdsWeights(path)) return;
  const files = oneFile ? [basename(path)] : filesUnder(path);
  const shown = files.slice(0, 8).join(', ') + (files.length > 8 ? `, … (${files.length} files)` : '');
  throw new SupervisorUsageError(
    `final/ would hold no model weights: ${what} has ${files.length === 0 ? 'no files' : shown}` +
      ' (none is a safetensors file, a torch.save archive with data.pkl, or a zip of model safetensors; ' +
      'optimizer, scheduler, scaler, rng_state and training_args files are not a model); ' +
      'no terminal pointer was written. Pass --final <dir> with the folder the trainer saved the finished model in',
    { field: 'final' },
  );
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** Picks and stages the final folder; throws SupervisorUsageError (field `final`) when it holds no weights. */
export function stageFinal(p: {
  outputDir: string;
  finalDir: string | null;
  newest: WatchedCheckpoint | null;
  /** Top-level names that are checkpoints (file checkpoints are not the finished model's files). @default none */
  isCheckpoint?: (name: string) => boolean;
  /** Top-level files this run wrote (appeared or changed after launch). @default every file */
  thisRun?: (name: string) => boolean;
}): StagedFinal {
  if (p.finalDir !== null) {
    let ok = false;
    try {
      ok = statSync(p.finalDir).isDirectory();
    } catch {
      ok = false;
    }
    if (!ok)
      throw new SupervisorUsageError(
        `--final ${p.finalDir}: not a folder the trainer wrote; pass the folder holding the finished model`,
        { field: 'final' },
      );
    refuseWithoutWeights(p.finalDir, `--final ${p.finalDir}`);
    return { dir: p.finalDir, source: p.finalDir, step: localCheckpointStep({ dir: p.finalDir }), cleanup: () => {} };
  }
  let files: string[] = [];
  try {
    files = readdirSync(p.outputDir, { withFileTypes: true })
      .filter((e) => e.isFile() && !e.name.startsWith('.') && !(p.isCheckpoint?.(e.name) ?? false))
      .filter((e) => p.thisRun?.(e.name) ?? true)
      .map((e) => e.name);
  } catch {
    files = [];
  }
  if (files.length > 0) {
    const dir = join(p.outputDir, `.soup-final-${process.pid}`);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir);
    for (const f of files) {
      try {
        linkSync(join(p.outputDir, f), join(dir, f));
      } catch {
        copyFileSync(join(p.outputDir, f), join(dir, f));
      }
    }
    const cleanup = (): void => rmSync(dir, { recursive: true, force: true });
    try {
      refuseWithoutWeights(dir, `the top of ${p.outputDir}`);
    } catch (err) {
      cleanup();
      throw err;
    }
    return { dir, source: p.outputDir, step: localCheckpointStep({ dir }), cleanup };
  }
  if (p.newest !== null) {
    if (p.newest.kind === 'file') {
      refuseWithoutWeights(p.newest.path, relative(p.outputDir, p.newest.path) || p.newest.path);
      const dir = join(p.outputDir, `.soup-final-${process.pid}`);
      rmSync(dir, { recursive: true, force: true });
      mkdirSync(dir);
      try {
        linkSync(p.newest.path, join(dir, basename(p.newest.path)));
      } catch {
        copyFileSync(p.newest.path, join(dir, basename(p.newest.path)));
      }
      return {
        dir,
        source: p.newest.path,
        step: p.newest.step,
        cleanup: () => rmSync(dir, { recursive: true, force: true }),
      };
    }
    refuseWithoutWeights(p.newest.path, relative(p.outputDir, p.newest.path) || p.newest.path);
    return { dir: p.newest.path, source: p.newest.path, step: p.newest.step, cleanup: () => {} };
  }
  throw new SupervisorUsageError(
    `the trainer exited 0 but left no model files in ${p.outputDir} and no checkpoint: pass --final <dir> with ` +
      `the folder holding the finished model`,
    { field: 'final' },
  );
}
