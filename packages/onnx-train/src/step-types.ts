// The types a training step, its helpers and the budget planner share. Types only: every
// step module imports from here, and this file imports no step module (no import circle).
import type { BudgetBlock } from '@soup/grad-ckpt';
import type { FloatDType } from './_graph';
import type { PeakMethod } from './_peak-rss';
import type { AdamWOptions } from './adamw-options';
import type { GptSpec } from './gpt-spec';
import type { FloatArray } from './init-parameters';
import type { GradientCheckpointingOption } from './resolve-recompute';

/** Where the step runs. */
export type ExecutionProviderName = 'cpu' | 'cuda';

/** Timings of one step, handed to `TrainStepOptions.measure`. */
export interface StepMeasurement {
  /** The optimizer step just completed (1-based). */
  step: number;
  batchSize: number;
  /** batchSize × seqLen */
  tokens: number;
  loss: number;
  gradNorm: number;
  /** Time inside `session.run` (forward + backward + AdamW). */
  runMs: number;
  /** Whole `run()` call: feeds, session.run, state swap. */
  totalMs: number;
}

/** What `TrainStep.run` returns. */
export interface StepResult extends StepMeasurement {
  lr: number;
  /** Sequences per forward/backward (m); `batchSize` (G) when the step was not split. */
  microBatchSize: number;
  /** Micro-batches whose gradients were summed before the one optimizer update (a = G / m). */
  accumulation: number;
  /**
   * The one optimizer update's time (clipping + AdamW, its feeds and the state swap), when it ran
   * apart from the forward/backward: an accumulated step, or any segmented step. Null when it ran
   * inside the fused step's one session (no accumulation), where it cannot be told apart.
   */
  updateMs: number | null;
}

/** Options of one `run()`. */
export interface RunStepOptions {
  /** This step's learning rate. @default the step's `lr` */
  lr?: number;
  /**
   * Sequences per forward/backward (m), a divisor of the batch's size G: the gradients of the
   * G / m micro-batches are accumulated, each weighted by its share of the batch's tokens (the
   * loss is the mean over all G sequences' tokens), then clipped once and applied in one AdamW
   * update. The parameters and moments change only at that update: a failure in a micro-batch
   * leaves them as they were before the step. @default the whole batch (no accumulation)
   */
  microBatchSize?: number;
  /**
   * Data parallel: this process runs only its rank's share of the micro-batches and exchanges the
   * results with the other ranks before the one update (see {@link DataParallel}). @default one process
   */
  dataParallel?: DataParallel;
}

/** One micro-batch's forward + backward: its mean loss and its unscaled gradients, in `model.params` order. */
export interface MicroBatchResult {
  loss: number;
  grads: FloatArray[];
}

/**
 * Several processes (ranks) share each optimizer step. The G / m micro-batches of a batch are split
 * into `worldSize` runs of consecutive ones; rank r computes run r. `exchange` hands this rank's
 * results to the others and returns every micro-batch's, in micro-batch order (an all-gather). Each
 * rank then sums them exactly as one process accumulates them, in the same order: the update is
 * bit-identical to one process at the same G and m. The step owns the arrays `exchange` returns (it scales
 * and frees them in place): return copies, never another rank's arrays.
 */
export interface DataParallel {
  rank: number;
  worldSize: number;
  exchange(mine: MicroBatchResult[]): Promise<MicroBatchResult[]>;
}

export interface TrainStepOptions {
  spec: GptSpec;
  /** Parameter, activation and optimizer precision. @default 'float32' */
  dtype?: FloatDType;
  /** Modules to recompute in the backward (see `buildTrainingModel`). @default [] */
  recompute?: readonly string[];
  /**
   * Gradient-checkpointing tier, resolved by `@soup/grad-ckpt` to the recompute set (see
   * `resolveRecompute`): `'full'`, `'medium'`, `'selective'`, `'auto'` (with `gpuMemoryGb`),
   * off, or `{tier: 'budget', memoryBudgetBytes, batchSize}`, planned by measured steps before
   * the step is built (`planBudgetTier`; the report is `budgetReport`). Not together with `recompute`.
   * @default undefined (use `recompute`)
   */
  gradientCheckpointing?: GradientCheckpointingOption;
  /** AdamW constants (see `AdamWOptions` for defaults). */
  adamw?: AdamWOptions;
  /** Seed of the parameter initialisation (ignored when `parameters` is given). @default 0 */
  seed?: number;
  /** Start from these parameters instead of a fresh initialisation (copied). */
  parameters?: ReadonlyMap<string, FloatArray>;
  /** Learning rate used when `run()` is not given one. @default 1e-3 */
  lr?: number;
  /** @default 'cpu' */
  executionProvider?: ExecutionProviderName;
  /** CUDA device ordinal. @default 0 */
  deviceId?: number;
  /**
   * GPU memory budget for the CUDA arena, in bytes. onnxruntime-node 1.30's binding forwards only
   * `deviceId` to the CUDA provider, so ORT does not enforce it; it is kept on the step
   * (`gpuMemLimitBytes`) for probes that gate peak memory against a budget.
   */
  gpuMemLimitBytes?: number;
  /** ORT intra-op threads; 1 makes every step bit-reproducible. @default ORT's choice (physical cores) */
  intraOpNumThreads?: number;
  /** ORT graph optimisations (CommonSubexpressionElimination always stays off). @default 'all' */
  graphOptimizationLevel?: 'disabled' | 'basic' | 'extended' | 'all';
  /** Write an ORT profile (per-node times) with this file prefix; read it after `endProfiling()`. */
  profileFilePrefix?: string;
  /**
   * ORT's CPU arena. Off, every tensor is a plain allocation freed when it dies, so a process's
   * peak RSS follows the graph's live activations (what memory measurements want). @default true
   */
  enableCpuMemArena?: boolean;
  /**
   * ORT's memory pattern (one pre-planned block per input shape). Off by default: the block is
   * allocated on top of what the arena kept from the first run, which raises the peak by about
   * a third for this graph and hides what recompute saves. @default false
   */
  enableMemPattern?: boolean;
  /** Called after every `run()` with the step's timings. */
  measure?: (m: StepMeasurement) => void;
  /**
   * Create the fused step's session on its first whole step instead of at create: a step used only
   * for accumulated steps and micro-steps (`microStep`) never opens it. Ignored by the segmented
   * step. @default false
   */
  deferSession?: boolean;
}

/** The parameters, the AdamW moments and the step counter: everything a resume needs. */
export interface TrainStepState {
  /** Completed optimizer steps. */
  step: number;
  parameters: Map<string, FloatArray>;
  m: Map<string, FloatArray>;
  v: Map<string, FloatArray>;
}

/** One measured configuration. */
export interface BudgetMeasurement {
  /** `off`: nothing recomputed; `full`: every block; `plan`: a candidate plan. */
  label: 'off' | 'full' | 'plan';
  recompute: string[];
  peakBytes: number;
  /** The model's prediction (plans only). */
  predictedPeakBytes?: number;
}

/** What the budget tier chose and the measurements behind it. */
export interface BudgetTierReport {
  /** Blocks to recompute (forward order). */
  recompute: string[];
  /** `predictPeakBytes` of `recompute` under the calibrated per-block model. */
  predictedPeakBytes: number;
  /** The measured peak of a step with `recompute` (the confirming measurement). */
  measuredPeakBytes: number;
  /** `measuredPeakBytes <= memoryBudgetBytes`. */
  fits: boolean;
  memoryBudgetBytes: number;
  batchSize: number;
  /** Measured peak with nothing recomputed / with every block recomputed. */
  offPeakBytes: number;
  fullPeakBytes: number;
  /** The model: peak(R) = baselineBytes + Σ kept blocks' activationBytes + max recomputed block's activationBytes. */
  baselineBytes: number;
  blocks: BudgetBlock[];
  /** Every plan confirmed, in order; more than one when a plan measured over budget and more blocks were taken. */
  attempts: { recompute: string[]; predictedPeakBytes: number; measuredPeakBytes: number }[];
  peakMethod: PeakMethod;
}

/** The recompute set a step is built with, how it was chosen, and the budget tier's report. */
export interface StepTier {
  recompute: string[];
  description: string;
  budgetReport: BudgetTierReport | undefined;
}
