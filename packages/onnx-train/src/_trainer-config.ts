// How a Trainer's options become the step's options, the run's fingerprint config and the
// micro-batch check.
import { resolveAdamW } from './adamw-options';
import type { CreateTrainStepOptions } from './create-train-step';
import { withPlanBatch } from './_step-tier';
import { DataError } from './errors';
import type { TextCorpus } from './load-text-corpus';
import type { TrainerOptions } from './trainer-types';

/** The options of the training step a Trainer builds. */
export function stepOptionsOf(options: TrainerOptions): CreateTrainStepOptions {
  return {
    spec: options.spec,
    seed: options.seed ?? 0,
    ...(options.dtype !== undefined ? { dtype: options.dtype } : {}),
    ...(options.recompute !== undefined ? { recompute: options.recompute } : {}),
    ...(options.gradientCheckpointing !== undefined
      ? {
          gradientCheckpointing: withPlanBatch(
            options.gradientCheckpointing,
            options.microBatchSize ?? options.batchSize,
          ),
        }
      : {}),
    ...(options.adamw !== undefined ? { adamw: options.adamw } : {}),
    ...(options.executionProvider !== undefined ? { executionProvider: options.executionProvider } : {}),
    ...(options.deviceId !== undefined ? { deviceId: options.deviceId } : {}),
    ...(options.gpuMemLimitBytes !== undefined ? { gpuMemLimitBytes: options.gpuMemLimitBytes } : {}),
    ...(options.intraOpNumThreads !== undefined ? { intraOpNumThreads: options.intraOpNumThreads } : {}),
    ...(options.measure !== undefined ? { measure: options.measure } : {}),
    ...(options.execution !== undefined ? { execution: options.execution } : {}),
    ...(options.offload !== undefined ? { offload: options.offload } : {}),
  };
}

export function checkMicroBatchSize(batchSize: number, m: number | undefined): void {
  if (m === undefined) return;
  if (!Number.isInteger(m) || m < 1 || batchSize % m !== 0) {
    throw new DataError(
      `microBatchSize must be a positive divisor of batchSize ${batchSize} (got ${m}): ` +
        `m × a = ${batchSize} with a whole accumulation a`,
    );
  }
}

export function fingerprintConfig(o: TrainerOptions, corpus: TextCorpus): Record<string, unknown> {
  const lr = o.lr ?? 3e-4;
  return {
    spec: o.spec,
    dtype: o.dtype ?? 'float32',
    seed: o.seed ?? 0,
    batch_size: o.batchSize,
    // The schedule's horizon, under the key it always had: an extended run (a longer totalSteps, the same schedule)
    // keeps its fingerprint.
    total_steps: o.scheduleSteps ?? o.totalSteps,
    lr,
    warmup_steps: o.warmupSteps ?? 0,
    min_lr: o.minLr ?? lr / 10,
    adamw: resolveAdamW(o.adamw),
    eval_fraction: o.evalFraction ?? 0.1,
    data_sha256: corpus.sha256,
  };
}
