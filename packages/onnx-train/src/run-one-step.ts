import { withPlanBatch } from './_step-tier';
import { makeSyntheticBatch } from './make-synthetic-batch';
import { createTrainStep, type CreateTrainStepOptions } from './create-train-step';

/** The step's options (`execution` and `offload` included) plus the synthetic batch. */
export interface RunOneStepOptions extends Omit<CreateTrainStepOptions, 'parameters' | 'measure'> {
  /** Sequences in the synthetic batch. */
  batchSize: number;
  /** Seed of the synthetic batch. @default 0 */
  batchSeed?: number;
  /**
   * Steps to run (the last one is reported); 2 shows the steady state, after ORT's first-run allocations. @default 1
   */
  steps?: number;
}

export interface OneStepReport {
  batchSize: number;
  tokens: number;
  loss: number;
  gradNorm: number;
  /** Graph build + session creation + parameter init (and the budget tier's planning, when asked for). */
  createMs: number;
  /** `session.run` of the reported step. */
  runMs: number;
  /** The modules the step recomputed (from `recompute` or the `gradientCheckpointing` tier). */
  recompute: string[];
}

/**
 * Builds a training step for `spec`, runs it on a synthetic batch of `batchSize` and releases
 * it: what a batch-size probe does in its child process. Failures (e.g. ORT's
 * `Failed to allocate memory for requested buffer`) reject with `TrainStepError`, ORT's text kept.
 */
export async function runOneStep(options: RunOneStepOptions): Promise<OneStepReport> {
  const { batchSize, batchSeed, steps, ...stepOptions } = options;
  const t0 = performance.now();
  const step = await createTrainStep(
    stepOptions.gradientCheckpointing !== undefined
      ? { ...stepOptions, gradientCheckpointing: withPlanBatch(stepOptions.gradientCheckpointing, batchSize) }
      : stepOptions,
  );
  const createMs = performance.now() - t0;
  try {
    const batch = makeSyntheticBatch({ spec: step.spec, batchSize, seed: batchSeed ?? 0 });
    let last = await step.run(batch);
    for (let i = 1; i < (steps ?? 1); i++) last = await step.run(batch);
    return {
      batchSize,
      tokens: last.tokens,
      loss: last.loss,
      gradNorm: last.gradNorm,
      createMs,
      runMs: last.runMs,
      recompute: step.model.recompute,
    };
  } finally {
    await step.release();
  }
}
