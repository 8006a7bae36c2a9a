// What `soup run` pushes as final/: --final <dir>, else the files at the top of {output_dir} (hard-linked
// into a scratch folder), else (no files there) the newest complete checkpoint of this run. Whatever it is must hold
// model
// weights, or no terminal pointer is written.
import { localCheckpointStep } from '@soup/hub-ckpt';
import { copyFileSync, linkSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { SupervisorUsageError } from './errors';
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

/** File names that hold model weights. */
export const WEIGHT_FILE: RegExp = /\.(safetensors|bin|pt|pth|ckpt)$/i;

/** Every file under `dir` (relative paths, sorted). */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (abs: string, rel: string): void => {
    for (const e of readdirSync(abs, { withFileTypes: true })) {
      const r = rel === '' ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory()) walk(join(abs, e.name), r);
      else if (e.isFile()) out.push(r);
    }
  };
  try {
    walk(dir, '');
  } catch {
    // missing: no files
  }
  return out.sort();
}

/** Whether a folder holds model weights (a .safetensors/.bin/.pt/.pth/.ckpt file, at any depth). */
export function holdsWeights(dir: string): boolean {
  return filesUnder(dir).some((f) => WEIGHT_FILE.test(f));
}

function refuseWithoutWeights(dir: string, what: string): void {
  if (holdsWeights(dir)) return;
  const files = filesUnder(dir);
  const shown = files.slice(0, 8).join(', ') + (files.length > 8 ? `, … (${files.length} files)` : '');
  throw new SupervisorUsageError(
    `final/ would hold no model weights: ${what} has ${files.length === 0 ? 'no files' : shown}` +
      ` (no .safetensors, .bin, .pt, .pth or .ckpt); ` +
      'no terminal pointer was written. Pass --final <dir> with the folder the trainer saved the finished model in',
    { field: 'final' },
  );
}

/** Picks and stages the final folder; throws SupervisorUsageError (field `final`) when it holds no weights. */
export function stageFinal(p: {
  outputDir: string;
  finalDir: string | null;
  newest: WatchedCheckpoint | null;
  /** Top-level names that are checkpoints (file checkpoints are not the finished model's files). @default none */
  isCheckpoint?: (name: string) => boolean;
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
