// `TrainStep`: the fused step (see _fused-step.ts) created from a gradient-checkpointing tier —
// explicit `recompute`, a fixed tier, or the budget tier planned by measured steps.
import { FusedTrainStep } from './_fused-step';
import { resolveStepTier } from './_step-tier';
import type { TrainStepOptions } from './step-types';

export { createTrainingSession, DISABLE_CSE, trainingSessionOptions } from './_training-session';
export type {
  ExecutionProviderName,
  StepMeasurement,
  StepResult,
  TrainStepOptions,
  TrainStepState,
} from './step-types';

/**
 * One real training step (forward + backward + clipping + AdamW) as a single ONNX Runtime
 * session over a graph of standard operators. Owns the parameters and moments between steps.
 *
 * ```ts
 * const step = await TrainStep.create({ spec, seed: 1, intraOpNumThreads: 1 });
 * const { loss, gradNorm } = await step.run(makeSyntheticBatch({ spec, batchSize: 4 }));
 * ```
 */
export class TrainStep extends FusedTrainStep {
  /** Resolves the tier, builds the graph, creates the session and initialises (or copies in) the parameters. */
  static async create(options: TrainStepOptions): Promise<TrainStep> {
    const tier = await resolveStepTier(options);
    const { model, session, parameters } = await FusedTrainStep.prepare(options, tier);
    const step = new TrainStep(options, model, session, parameters);
    step.setTier(tier);
    return step;
  }
}
