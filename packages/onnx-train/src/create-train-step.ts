import { TrainInputError } from './errors';
import { SegmentedTrainStep, type SegmentedTrainStepOptions } from './segmented-train-step';
import { TrainStep } from './train-step';

/** How a training step runs: one ONNX Runtime session for the whole step, or one per segment. */
export type ExecutionMode = 'fused' | 'segmented';

/** Options of {@link createTrainStep}: the step's options plus the execution mode. */
export interface CreateTrainStepOptions extends SegmentedTrainStepOptions {
  /**
   * `'fused'`: the whole step is one graph and one session (fastest; every activation lives
   * inside one run). `'segmented'`: one session per segment, each block's saved activations
   * passed through `offload`'s activation store between its forward and its backward.
   * @default 'segmented' when `offload.target` is `'cpu'` or `'disk'`, else `'fused'`
   */
  execution?: ExecutionMode;
}

/**
 * Creates a `TrainStep` (fused) or a `SegmentedTrainStep` (segmented): same interface, same
 * gradients and updates.
 *
 * @throws {TrainInputError} an unknown `execution`, or an offload target other than `'keep'`
 *   with `execution: 'fused'`; the rest as the step's own `create`
 */
export async function createTrainStep(options: CreateTrainStepOptions): Promise<TrainStep | SegmentedTrainStep> {
  const { execution, offload, openActivationStore, ...stepOptions } = options;
  const offloads = (offload !== undefined && offload.target !== 'keep') || openActivationStore !== undefined;
  const mode = execution ?? (offloads ? 'segmented' : 'fused');
  if (mode !== 'fused' && mode !== 'segmented') {
    throw new TrainInputError(`execution must be 'fused' or 'segmented' (got ${JSON.stringify(mode)})`);
  }
  if (mode === 'segmented') {
    return SegmentedTrainStep.create({
      ...stepOptions,
      ...(offload !== undefined ? { offload } : {}),
      ...(openActivationStore !== undefined ? { openActivationStore } : {}),
    });
  }
  if (offloads) {
    throw new TrainInputError(
      `offload.target '${offload?.target ?? 'custom store'}' needs execution: 'segmented' (the fused step keeps ` +
        `every activation inside one ONNX Runtime run, so there is nothing to offload); pass execution: ` +
        `'segmented' or leave execution out`,
    );
  }
  return TrainStep.create(stepOptions);
}
