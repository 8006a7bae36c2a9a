// What a supervisor hands the trainer child (run-train-child.ts): the run made concrete for this device, in a
// JSON file the child reads at each launch, and the lines the child reports back on its stdout.
import { readFileSync } from 'node:fs';
import type { TrainerOptions } from './trainer-types';

/** One session as the checkpoint's record keeps it (the shape of @soup/supervisor's `MicroSession`). */
export interface TrainSessionRecord {
  /** The first step this session trained (1-based). */
  start_step: number;
  micro_batch_size: number;
  grad_accum: number;
  /** Where m came from: config, static, cache, probe. */
  source: string;
  /** The session's out-of-memory step-downs, as the supervisor recorded them. */
  oom_step_downs: unknown[];
}

/** The job file: everything but m and the checkpoint to resume from (the supervisor's placeholders). */
export interface TrainJob {
  /** The trainer's options without the micro-batch (JSON: no functions, no typed arrays). */
  trainer: Omit<TrainerOptions, 'microBatchSize'>;
  /** Steps saved as `checkpoint-<step>/` (the push boundaries, and a --stop-after-steps stop). */
  saveSteps: number[];
  /** The child exits 0 here; at the horizon it validates and writes `finalDir` first. */
  stopStep: number;
  finalDir: string;
  val: { path: string; maxLength: number; batches: number } | null;
  /** soup_run.json's fields that do not depend on m. */
  record: Record<string, unknown>;
  /** The sessions before this one (from the resumed checkpoint), and this one's start and step-downs. */
  sessionsBefore: TrainSessionRecord[];
  session: Omit<TrainSessionRecord, 'micro_batch_size' | 'grad_accum'>;
}

/** The prefix of a line the child reports (`soup-train {json}`); anything else is the child's own output. */
export const REPORT_PREFIX = 'soup-train ';

/** One report of the child. */
export type TrainReport =
  /** Ready to train (`resumedAt`: the step it resumed at); not a step report, so no peak is placed at it. */
  | { event: 'ready'; resumedAt: number; startupMs: number }
  /** About to run `step`. */
  | { event: 'begin'; step: number }
  | {
      event: 'step';
      step: number;
      loss: number;
      lr: number;
      microBatchSize: number;
      accumulation: number;
      tokensConsumed: number;
      ms: number;
    }
  | { event: 'validation'; loss: number; windows: number }
  | { event: 'validation-oom'; batchSize: number; error: string }
  | { event: 'validation-empty'; bytes: number };

export function readTrainJob(path: string): TrainJob {
  return JSON.parse(readFileSync(path, 'utf8')) as TrainJob;
}
