// How supervise() runs soup's own trainer child: its command line, where it writes, and the session's settings
// that follow from how the child saves (whole checkpoints, only at push boundaries and the session end).
import type { SoupConfig } from '@soup/config';
import type { SuperviseOptions } from '@soup/supervisor';
import { join } from 'node:path';

/** Where a run of soup's own trainer keeps its files under the config's output folder. */
export interface TrainPaths {
  /** The child's `checkpoint-<step>/` folders. */
  ckptRoot: string;
  /** The terminal checkpoint, written at the horizon. */
  finalDir: string;
  /** The child's job file (@soup/onnx-train's TrainJob), rewritten at each step-down. */
  jobPath: string;
}

/** The paths of {@link TrainPaths} under `output`. */
export function trainPathsOf(output: string): TrainPaths {
  return {
    ckptRoot: join(output, 'checkpoints'),
    finalDir: join(output, 'final'),
    jobPath: join(output, '.soup-train-job.json'),
  };
}

/** Options of {@link trainSuperviseOptions}. */
export interface TrainSuperviseOptionsOptions {
  config: SoupConfig;
  /** The script that runs @soup/onnx-train's runTrainChild. */
  childPath: string;
  runId: string;
  timeLimitMs: number | null;
  /** Absent: the store's default (2 min on a directory, 10 min on the Hub). */
  leaseTtlMs?: number;
  squashHistory: boolean | 'auto';
  /** Absent: the store's default (5 min on the Hub, 0 on a directory). */
  minCommitIntervalMs?: number;
  resume: 'auto' | 'never';
  /** Remote checkpoints kept; null keeps every one. */
  keepRemote: number | null;
  /** Steps this session trains before it stops at a segment boundary (--stop-after-steps); 0: run to the horizon. */
  stopAfterSteps: number;
}

/** The options {@link trainSuperviseOptions} sets. */
export type TrainSuperviseSettings = Pick<
  SuperviseOptions,
  | 'argv'
  | 'outputDir'
  | 'outputDirGiven'
  | 'runId'
  | 'leaseTtlMs'
  | 'squashHistory'
  | 'minCommitIntervalMs'
  | 'resume'
  | 'horizon'
  | 'stopBeforeHorizon'
  | 'completeFile'
  | 'settleMs'
  | 'graceMs'
  | 'pollMs'
  | 'timeLimitMs'
  | 'stopSignal'
  | 'finalDir'
  | 'pushEach'
  | 'keepLocal'
  | 'keepRemote'
>;

/** supervise()'s options for soup's own trainer child (see the file comment). */
export function trainSuperviseOptions(p: TrainSuperviseOptionsOptions): TrainSuperviseSettings {
  const { config } = p;
  const { ckptRoot, finalDir, jobPath } = trainPathsOf(config.output);
  return {
    argv: [
      process.execPath,
      p.childPath,
      jobPath,
      '--output-dir',
      '{output_dir}',
      '--micro-batch-size',
      '{micro_batch_size}',
      '--resume-from',
      '{resume_from}',
    ],
    outputDir: ckptRoot,
    outputDirGiven: true,
    runId: p.runId,
    ...(p.leaseTtlMs === undefined ? {} : { leaseTtlMs: p.leaseTtlMs }),
    squashHistory: p.squashHistory,
    ...(p.minCommitIntervalMs === undefined ? {} : { minCommitIntervalMs: p.minCommitIntervalMs }),
    resume: p.resume,
    horizon: config.training.steps,
    // The child stops at the segment boundary by design: the supervisor's segment sentence names why.
    stopBeforeHorizon: p.stopAfterSteps > 0 ? '--stop-after-steps; validation skipped' : null,
    completeFile: 'trainer_state.json',
    // A checkpoint appears whole (written beside, then renamed): complete once it is there.
    settleMs: 0,
    graceMs: 120_000,
    pollMs: 200,
    timeLimitMs: p.timeLimitMs,
    stopSignal: 'SIGTERM',
    finalDir,
    // The child saves only the push boundaries (and the session end's step): each one goes to the store.
    pushEach: true,
    // At least the newest: a step-down relaunches the trainer from it.
    keepLocal: Math.max(1, config.hub.keepLocal),
    keepRemote: p.keepRemote ?? Number.MAX_SAFE_INTEGER,
  };
}

/**
 * soup train's resume mode from `--resume`: `never`, else `auto`; `force` is refused, with the sentence that says
 * why (another run's checkpoints would not load into this model, or not mean the same).
 */
export function trainResumeOf(
  resume: 'auto' | 'never' | 'force' | undefined,
): { resume: 'auto' | 'never'; refusal: null } | { resume: null; refusal: string } {
  if (resume === 'force')
    return {
      resume: null,
      refusal:
        "--resume force: soup train cannot continue another run's checkpoints (its model or data differ, so the " +
        'weights would not load or not mean the same); pass a new --repo for this run, or restore the old config ' +
        'to resume it',
    };
  return { resume: resume === 'never' ? 'never' : 'auto', refusal: null };
}
