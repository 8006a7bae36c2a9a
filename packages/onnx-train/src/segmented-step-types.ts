// The public types of the segmented training step: its options, its model description, its counters.
import type { ActivationStore, ActivationStoreStats, OffloadTarget } from '@soup/offload';
import type { FloatDType } from './_graph';
import type { ResolvedAdamW } from './adamw-options';
import type { GptSpec } from './gpt-spec';
import type { ParamSpec } from './parameter-specs';
import type { TrainStepOptions } from './step-types';

/** Where the segmented step keeps each block's saved activations between its forward and its backward. */
export interface OffloadOptions {
  /**
   * `'keep'`: as the runtime returned them (no offloading); `'cpu'`: a private host copy (a CUDA
   * option: on a CPU device @soup/offload's check refuses it, as there is nothing to move);
   * `'disk'`: one scratch file per tensor in `saveDir`, deleted when the backward reads it.
   * @default 'keep'
   */
  target: OffloadTarget;
  /** Scratch directory for `'disk'`, strictly below `cwd` (created when missing). @default null */
  saveDir?: string | null;
  /** The directory `saveDir` must stay under. @default process.cwd() */
  cwd?: string;
  /**
   * How `'disk'` scratch files are flushed (@soup/offload's `ActivationStore` option): `'data'`
   * (fdatasync in the background, so the pages become reclaimable), `true` (fsync, awaited) or
   * `false` (none: the files stay dirty page cache, which a memory limit counts).
   * @default 'data'
   */
  fsync?: boolean | 'data';
  /**
   * `'disk'`: anonymous scratch files (Linux `O_TMPFILE`, @soup/offload's `anonymousFiles`): no
   * name in `saveDir`, only a descriptor held until the backward reads the tensor, so nothing is
   * left behind even when the process is SIGKILLed or OOM-killed. Named files where the file
   * system refuses them, or with `false`.
   * @default true
   */
  anonymousFiles?: boolean;
}

/** Options of {@link SegmentedTrainStep}: {@link TrainStepOptions} plus the offload target. */
export interface SegmentedTrainStepOptions extends TrainStepOptions {
  /** Activation offloading, checked with @soup/offload's `checkOffloadConfig`. @default {target: 'keep'} */
  offload?: OffloadOptions;
  /**
   * Opens the activation store of each step instead of `offload` (the step closes it when the step
   * ends). For tests and custom stores; `offload` is the normal way. @default undefined
   */
  openActivationStore?: () => ActivationStore;
  /**
   * ORT's CPU arena of the (single) segments session: it keeps what the largest segment needs and
   * reuses it for every segment. Off, each tensor is a C allocation, and the C allocator keeps
   * freed memory fragmented: a higher peak. @default true
   */
  enableCpuMemArena?: boolean;
}

/** What the segmented step's graphs are (the counterpart of the fused `TrainingModel`). */
export interface SegmentedTrainingModel {
  spec: GptSpec;
  dtype: FloatDType;
  /** The recompute set applied (validated, sorted by position). */
  recompute: string[];
  adamw: ResolvedAdamW;
  params: ParamSpec[];
  /** The forward/backward pairs in forward order: `h.<i>.attn` and `h.<i>.mlp` (half blocks). */
  units: string[];
  /** Segments (one `session.run` each) in execution order. */
  segments: string[];
}

/** Counters of the last step of a {@link SegmentedTrainStep}. */
export interface SegmentedStepStats {
  /** The activation store's counters at the end of the step (bytes packed, peak resident / disk bytes, files). */
  store: ActivationStoreStats;
  /**
   * Embedding + block forwards; with `offload: {target: 'keep'}` the whole pass (one chain: forward, head, backward),
   * headMs and backwardMs then 0.
   */
  forwardMs: number;
  /** LM head + loss, forward and backward. */
  headMs: number;
  /** Block backwards + embedding backward. */
  backwardMs: number;
  /** Time spent in `pack` (part of forwardMs). */
  packMs: number;
  /**
   * Time the backward waited for unpacking (part of backwardMs): the next unit's saved tensors are read while the
   * current unit's backward (or, for the last unit, the head) runs, so only what that overlap did not hide.
   */
  unpackMs: number;
  /** Gradient norm, then clipping + AdamW (one run per block, one for the rest). */
  optimizerMs: number;
}
