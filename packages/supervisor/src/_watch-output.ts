// The trainer's output folder: one supervisor at a time, and the watcher of its checkpoints.
import { basename, join } from 'node:path';
import { acquireOutputLock, type OutputLock } from './lock';
import type { SupervisedResume } from './resume-supervised';
import type { SessionOptions } from './supervise-options';
import { createCheckpointWatcher, type CheckpointWatcher } from './watch-checkpoints';
import type { Tell } from './_tell';

/**
 * Watches `o.outputDir` for this run's checkpoints: what is there before the launch is not this run's (the
 * checkpoint pulled for this session aside), and is told as leftovers; an argv without {output_dir} is warned about.
 */
export function watchOutput(p: {
  o: SessionOptions;
  stepRegex: RegExp | null;
  used: Set<string>;
  settleMs: number;
  resumed: SupervisedResume;
  tell: Tell;
}): CheckpointWatcher {
  const { o, resumed } = p;
  const { emit, warn, show } = p.tell;
  if (!p.used.has('{output_dir}') && !o.outputDirGiven) {
    warn(
      `the trainer command has no {output_dir}: soup watches ${show(o.outputDir)} (the default), and only ` +
        `checkpoints that appear there are pushed; ` +
        'put {output_dir} where the trainer takes its output folder, or pass --output-dir with the folder it ' +
        'writes',
    );
  }
  const watcher = createCheckpointWatcher({
    dir: o.outputDir,
    glob: o.checkpointGlob ?? 'checkpoint-*',
    ...(p.stepRegex ? { stepRegex: p.stepRegex } : {}),
    completeFile: o.completeFile ?? 'trainer_state.json',
    settleMs: p.settleMs,
  });
  const leftovers = watcher.markLaunch({ pulled: resumed.outcome === 'resume' ? basename(resumed.dir) : null });
  if (leftovers.length > 0) {
    const names = leftovers.map((c) => c.name);
    emit(
      'leftovers',
      `${show(o.outputDir)} already holds ` +
        `${names.length === 1 ? 'a checkpoint' : `${names.length} checkpoints`} from before this launch (` +
        `${names.slice(0, 6).join(', ')}${names.length > 6 ? ', …' : ''}): ` +
        "not this run's, never pushed (unless the trainer rewrites them); use a fresh --output-dir, or delete them",
    );
  }
  return watcher;
}

/** One supervisor per output folder: takes its lock over from an earlier run that ended without releasing it. */
export function lockOutput(outputDir: string, tell: Tell): OutputLock {
  return acquireOutputLock({
    dir: outputDir,
    onStale: (old) =>
      tell.warn(
        `${tell.show(join(outputDir, '.soup-run.lock'))}: an earlier soup run (pid ${old.pid}, started ` +
          `${old.started_at}) ended without releasing it; taking it over`,
      ),
  });
}
