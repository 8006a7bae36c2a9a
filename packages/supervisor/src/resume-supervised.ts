// Where a supervised run resumes: @soup/hub-ckpt's pullResume pulls the store's newest checkpoint that
// verifies and pulls cleanly into {output_dir}/checkpoint-<step>, walking back past corrupt ones. A file
// checkpoint (Lightning's `epoch=0-step=40.ckpt`) travels in a folder with FILE_CHECKPOINT_RECORD naming
// it, and {resume_from} is then the file itself.
import { pullResume, type CheckpointStore } from '@soup/hub-ckpt';
import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';

/** The record beside a file checkpoint in the store: `{"file": "<its name>"}`. */
export const FILE_CHECKPOINT_RECORD = 'soup_file_checkpoint.json';

/** What this session starts from. */
export type SupervisedResume =
  | { outcome: 'fresh' }
  | { outcome: 'complete'; step: number; pathInRepo: string }
  | {
      outcome: 'resume';
      step: number;
      pathInRepo: string;
      /** The pulled folder. */
      dir: string;
      /** What {resume_from} becomes: the folder, or the file of a file checkpoint. */
      resumeFrom: string;
      via: string | null;
      previousStep: number | null;
      fileCount: number;
      skipped: Array<{ step: number; pathInRepo: string; problems: string[] }>;
    };

/** The file a pulled folder stands for, when it holds a file checkpoint; else null. */
export function fileCheckpointIn(dir: string): string | null {
  try {
    const rec = JSON.parse(readFileSync(join(dir, FILE_CHECKPOINT_RECORD), 'utf8')) as { file?: unknown };
    return typeof rec.file === 'string' && rec.file === basename(rec.file) ? join(dir, rec.file) : null;
  } catch {
    return null;
  }
}

/** Resolves the pointer (with fallback) and pulls the checkpoint. */
export async function resumeSupervised(p: {
  store: CheckpointStore;
  run: string;
  outputDir: string;
  signal?: AbortSignal;
  log?: (line: string) => void;
  /** The run's horizon: a terminal pointer below it is reopened (the run was extended). */
  reopenBelow?: number;
}): Promise<SupervisedResume> {
  const r = await pullResume({
    store: p.store,
    run: p.run,
    dir: p.outputDir,
    fallback: true,
    repair: true,
    overwrite: true,
    ...(p.signal ? { signal: p.signal } : {}),
    ...(p.reopenBelow !== undefined ? { reopenBelow: p.reopenBelow } : {}),
    logger: { info: (l) => p.log?.(l) },
  });
  if (r.outcome === 'fresh') return { outcome: 'fresh' };
  if (r.outcome === 'complete') return { outcome: 'complete', step: r.step, pathInRepo: r.pathInRepo };
  return {
    outcome: 'resume',
    step: r.step,
    pathInRepo: r.pathInRepo,
    dir: r.localDir,
    resumeFrom: fileCheckpointIn(r.localDir) ?? r.localDir,
    via: r.via,
    previousStep: r.previousStep,
    fileCount: r.pulled.fileCount,
    skipped: r.skipped,
  };
}
