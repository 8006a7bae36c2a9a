// The public types of the Trainer: its options, its state, what each step and the loop report.
import type { FloatDType } from './_graph';
import type { AdamWOptions } from './adamw-options';
import type { GptSpec } from './gpt-spec';
import type { GradientCheckpointingOption } from './resolve-recompute';
import type { ExecutionProviderName, StepMeasurement } from './step-types';
import type { ExecutionMode } from './create-train-step';
import type { OffloadOptions } from './segmented-step-types';

export interface TrainerOptions {
  /** Model geometry; `vocabSize` must be at least 256 (byte-level tokens). */
  spec: GptSpec;
  /** Text files to train on, byte-level, concatenated in order. */
  files?: readonly string[];
  /** Text to train on (after the files). One of `files`/`text` is required. */
  text?: string;
  /** Sequences per optimizer step: the global batch G (part of the run's fingerprint). */
  batchSize: number;
  /**
   * Sequences per forward/backward (m), a divisor of `batchSize`: each step accumulates the
   * gradients of `batchSize / microBatchSize` micro-batches, then clips and updates once. Not part
   * of the fingerprint: a run may resume with another m (see `Trainer.setMicroBatchSize`).
   * @default batchSize
   */
  microBatchSize?: number;
  /** Length of the run in optimizer steps (its horizon), and the cosine schedule's unless `scheduleSteps` is given. */
  totalSteps: number;
  /**
   * The cosine schedule's horizon: the learning rate reaches `minLr` there and stays at `minLr` past it. Part of
   * the fingerprint in `totalSteps`' place, so a run extended to a longer `totalSteps` with the same
   * `scheduleSteps` is the same run and resumes its checkpoints. @default totalSteps
   */
  scheduleSteps?: number;
  /** Peak learning rate. @default 3e-4 */
  lr?: number;
  /** @default 0 */
  warmupSteps?: number;
  /** Learning rate at the end of the cosine decay. @default lr / 10 */
  minLr?: number;
  /** Seeds the parameter init and the sampler. @default 0 */
  seed?: number;
  /** Tail of the text held out for `evaluate()`. @default 0.1 */
  evalFraction?: number;
  /** Batches (of `batchSize` windows) that `evaluate()` averages over. @default 8 */
  evalBatches?: number;
  adamw?: AdamWOptions;
  /** @default 'float32' */
  dtype?: FloatDType;
  /** Modules recomputed in the backward (see `buildTrainingModel`). @default [] */
  recompute?: readonly string[];
  /**
   * Gradient-checkpointing tier (see `TrainStepOptions.gradientCheckpointing`); `{tier: 'budget',
   * memoryBudgetBytes}` is planned at this trainer's `batchSize`. Not together with `recompute`.
   * @default undefined
   */
  gradientCheckpointing?: GradientCheckpointingOption;
  /** @default 'cpu' */
  executionProvider?: ExecutionProviderName;
  /** @default 0 */
  deviceId?: number;
  gpuMemLimitBytes?: number;
  /** 1 makes the run bit-reproducible across processes. @default ORT's choice */
  intraOpNumThreads?: number;
  /** Per-step timings hook (see `TrainStepOptions.measure`). */
  measure?: (m: StepMeasurement) => void;
  /**
   * `'fused'` (one session) or `'segmented'` (a session per segment, saved activations through
   * `offload`); see `createTrainStep`. @default 'segmented' when offload.target is 'cpu' / 'disk', else 'fused'
   */
  execution?: ExecutionMode;
  /**
   * Activation offloading of the segmented step: `{target: 'keep' | 'cpu' | 'disk', saveDir}`. @default {target:
   * 'keep'}
   */
  offload?: OffloadOptions;
  /**
   * The run id written into checkpoints (`trainer_state.json` `run`, safetensors metadata), e.g.
   * the id a CLI also writes into its pointer, so a run has one id everywhere. A checkpoint is
   * still refused when its recorded config does not match this trainer's. @default the fingerprint
   */
  run?: string;
  /**
   * Append a training entry to `log_history` every this many steps (mean loss over them). @default max(1,
   * ceil(totalSteps / 500))
   */
  logEverySteps?: number;
}

/** One entry of `trainer_state.json`'s `log_history`, as the Hugging Face Trainer writes it. */
export interface LogHistoryEntry {
  step: number;
  /** Mean training loss over the steps since the previous entry. */
  loss?: number;
  learning_rate?: number;
  grad_norm?: number;
  eval_loss?: number;
}

/** Where the run stands; saved in `trainer_state.json`. */
export interface TrainerState {
  /** Completed optimizer steps. */
  step: number;
  /** Training windows drawn so far (the sampler's resume point). */
  cursor: number;
  /** step × batchSize × seqLen */
  tokensConsumed: number;
  /** The run id (`TrainerOptions.run`, else the fingerprint). */
  run: string;
}

export interface TrainerStepLog {
  step: number;
  /** m: sequences per forward/backward of this step. */
  microBatchSize: number;
  /** a: micro-batches accumulated into this step (m × a = batchSize). */
  accumulation: number;
  loss: number;
  gradNorm: number;
  lr: number;
  tokensConsumed: number;
  runMs: number;
  totalMs: number;
}

export interface CheckpointInfo {
  /** The checkpoint folder (holds model.safetensors, optimizer.safetensors, trainer_state.json). */
  dir: string;
  step: number;
  files: string[];
}

export interface TrainLoopOptions {
  /** Stop once this many steps are completed (a segment boundary). @default totalSteps */
  untilStep?: number;
  /** Parent folder of `checkpoint-<step>` folders. Required with `checkpointEvery`. */
  outputDir?: string;
  /** Save a checkpoint every N completed steps. */
  checkpointEvery?: number;
  /** Also save one when the loop stops (unless one was just saved). @default true when outputDir is set */
  checkpointAtEnd?: boolean;
  /** After every step. May be async (awaited). */
  onStep?: (log: TrainerStepLog) => void | Promise<void>;
  /** After every checkpoint is written, e.g. to push it to a Hub. May be async (awaited before training goes on). */
  onCheckpoint?: (info: CheckpointInfo) => void | Promise<void>;
  /** Stops after the current step (a checkpoint is still saved when `checkpointAtEnd`). */
  signal?: AbortSignal;
}

export interface TrainSummary {
  step: number;
  stopReason: 'horizon' | 'untilStep' | 'aborted';
  lastLoss: number | null;
  tokensConsumed: number;
  checkpoints: CheckpointInfo[];
}
