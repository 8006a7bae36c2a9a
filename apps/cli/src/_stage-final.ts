// What `soup run` pushes as final/: --final <dir>, else the model files at the top of {output_dir}
// (hard-linked into a scratch folder), else the newest complete checkpoint.
import { copyFileSync, linkSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { WatchedCheckpoint } from './_watch-checkpoints';
import { UsageError } from './errors';

/** A folder ready for pushFinal, and how to clean it up. */
export interface StagedFinal {
  dir: string;
  /** What the user would call it (the folder the files came from). */
  source: string;
  /** Step from its trainer_state.json (`global_step` or `step`), or null. */
  step: number | null;
  cleanup(): void;
}

function stepOf(dir: string): number | null {
  try {
    const s = JSON.parse(readFileSync(join(dir, 'trainer_state.json'), 'utf8')) as Record<string, unknown>;
    const v = s.global_step ?? s.step;
    return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : null;
  } catch {
    return null;
  }
}

/** Picks and stages the final folder. */
export function stageFinal(p: { outputDir: string; finalDir: string | null; newest: WatchedCheckpoint | null }): StagedFinal {
  if (p.finalDir !== null) {
    let ok = false;
    try {
      ok = statSync(p.finalDir).isDirectory();
    } catch {
      ok = false;
    }
    if (!ok) throw new UsageError(`--final ${p.finalDir}: not a folder the trainer wrote; pass the folder holding the finished model`);
    return { dir: p.finalDir, source: p.finalDir, step: stepOf(p.finalDir), cleanup: () => {} };
  }
  let files: string[] = [];
  try {
    files = readdirSync(p.outputDir, { withFileTypes: true })
      .filter((e) => e.isFile() && !e.name.startsWith('.'))
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
    return { dir, source: p.outputDir, step: stepOf(dir), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
  }
  if (p.newest !== null && p.newest.kind === 'dir') return { dir: p.newest.path, source: p.newest.path, step: p.newest.step, cleanup: () => {} };
  throw new UsageError(`the trainer exited 0 but left no model files in ${p.outputDir} and no checkpoint: pass --final <dir> with the folder holding the finished model`);
}
