// `SegmentedTrainStep`: the training step as one ONNX Runtime run per segment, each block's saved
// activations passing through an activation store. Its parts: segmented-step-types.ts (options and
// counters), _segment-sessions.ts (the segment graphs and their session), _segment-store.ts (the
// offload check and the store), _segmented-pass.ts (forward + backward), _segmented-optimizer.ts
// (gradient norm + AdamW), _segment-context.ts (what they share).
import type { ActivationStore, OffloadTarget } from '@soup/offload';
import type ort from 'onnxruntime-node';
import type { FloatDType } from './_graph';
import { releaseBuffers } from './_release-buffers';
import { type Feeds, runSegment, type SegmentContext, type Session, type Sessions } from './_segment-context';
import { openSegmentSessions, SEGMENT_SESSION_EXTRA } from './_segment-sessions';
import { resolveStore, type ResolvedStore } from './_segment-store';
import { gradNorm, optimize } from './_segmented-optimizer';
import { forwardBackward } from './_segmented-pass';
import { inMemoryPass } from './_in-memory-pass';
import {
  addParameterFeeds,
  applyState,
  batchFeeds,
  checkGpuMemLimit,
  checkLr,
  copyParameters,
  copyState,
  fillInitialState,
  reportStep,
  startParameters,
} from './_step-common';
import { createTrainingSession } from './_training-session';
import { resolveAdamW } from './adamw-options';
import { buildTrainingModel } from './build-training-model';
import { accumulateMicroBatches, splitMicroBatches, sumInto } from './_accumulate';
import { TrainInputError, TrainStepError } from './errors';
import { assertGptSpec, type GptSpec } from './gpt-spec';
import type { FloatArray } from './init-parameters';
import type { TrainBatch } from './make-synthetic-batch';
import { parameterSpecs } from './parameter-specs';
import { resolveRecompute } from './resolve-recompute';
import type { SegmentedStepStats, SegmentedTrainingModel, SegmentedTrainStepOptions } from './segmented-step-types';
import type { RunStepOptions, StepResult, TrainStepState } from './step-types';
import { tensorNames } from './tensor-names';

export type {
  OffloadOptions,
  SegmentedStepStats,
  SegmentedTrainingModel,
  SegmentedTrainStepOptions,
} from './segmented-step-types';

/**
 * The training step in segments: one ONNX Runtime run per segment (embedding forward, each half
 * block's forward, LM head + loss, each half block's backward, embedding backward, gradient norm,
 * AdamW per block), each block's saved activations passed through an `ActivationStore`
 * (`keep` / `cpu` / `disk`) between its forward and its backward. A recompute plan applies as in the fused graph: a
 * recomputed block saves only its input and re-runs its forward inside its backward segment.
 * Same interface as `TrainStep`; gradients and updates equal the fused step's.
 *
 * ```ts
 * const step = await SegmentedTrainStep.create({ spec, offload: { target: 'disk', saveDir: '.soup-acts' } });
 * const { loss, gradNorm } = await step.run(makeSyntheticBatch({ spec, batchSize: 32 }));
 * await step.release(); // no scratch file is left
 * ```
 */
export class SegmentedTrainStep {
  readonly spec: GptSpec;
  readonly dtype: FloatDType;
  readonly model: SegmentedTrainingModel;
  readonly executionProvider: 'cpu' | 'cuda';
  readonly gpuMemLimitBytes: number | undefined;
  /** The offload target and the resolved scratch directory (`null` unless `'disk'`). */
  readonly offload: { target: OffloadTarget; saveDir: string | null };
  /** Warnings of the offload check (e.g. a save dir given for `'cpu'`). */
  readonly offloadWarnings: string[];
  /** Learning rate used by `run()` when none is passed. */
  lr: number;
  /** Store counters and phase timings of the last `run()` / `gradients()`; null before the first. */
  lastStepStats: SegmentedStepStats | null = null;
  private readonly options: SegmentedTrainStepOptions;
  private readonly ctx: SegmentContext;
  private readonly allSessions: Session[];
  private readonly state = new Map<string, FloatArray>();
  /** microStep's sum of gradients (what an accumulated step sums into), kept between its calls. */
  private readonly microSum = new Map<string, FloatArray>();
  private readonly auxSessions = new Map<'loss', Promise<Session>>();
  private readonly openStore: () => ActivationStore;
  /** `offload: {target: 'keep'}`: the forward + backward as one chain (see `_in-memory-pass.ts`); null otherwise. */
  private readonly chain: Session | null;
  private completed = 0;
  private tierText = 'off';
  private released = false;

  private constructor(
    options: SegmentedTrainStepOptions,
    model: SegmentedTrainingModel,
    sessions: Sessions,
    allSessions: Session[],
    parameters: Map<string, FloatArray>,
    store: ResolvedStore,
    chain: Session | null,
  ) {
    this.chain = chain;
    this.options = options;
    this.spec = model.spec;
    this.dtype = model.dtype;
    this.model = model;
    this.ctx = { spec: model.spec, dtype: model.dtype, params: model.params, sessions, state: this.state };
    this.allSessions = allSessions;
    this.executionProvider = options.executionProvider ?? 'cpu';
    this.gpuMemLimitBytes = options.gpuMemLimitBytes;
    this.lr = options.lr ?? 1e-3;
    this.openStore = store.open;
    this.offload = { target: store.target, saveDir: store.saveDir };
    this.offloadWarnings = store.warnings;
    fillInitialState(this.state, model.params, parameters, model.dtype);
  }

  /**
   * Checks the offload config, builds the segment graphs, creates their sessions and initialises
   * (or copies in) the parameters.
   * @throws {TrainInputError} a bad option; an offload config @soup/offload refuses, with its messages
   */
  static async create(options: SegmentedTrainStepOptions): Promise<SegmentedTrainStep> {
    assertGptSpec(options.spec);
    checkGpuMemLimit(options.gpuMemLimitBytes);
    if (options.profileFilePrefix !== undefined) {
      throw new TrainInputError(
        "profileFilePrefix: ORT profiling is supported for execution: 'fused' only (a segmented step runs a dozen " +
          'sessions)',
      );
    }
    const store = resolveStore(options);
    const spec = { ...options.spec };
    const dtype = options.dtype ?? 'float32';
    if (dtype !== 'float32' && dtype !== 'float64')
      throw new TrainInputError(`dtype must be 'float32' or 'float64' (got ${String(dtype)})`);
    const tier = resolveRecompute({
      spec,
      ...(options.gradientCheckpointing !== undefined ? { gradientCheckpointing: options.gradientCheckpointing } : {}),
      ...(options.recompute !== undefined ? { recompute: options.recompute } : {}),
    });
    if (tier.budget !== null) {
      throw new TrainInputError(
        "gradientCheckpointing: tier 'budget' plans by measuring the fused step; with execution: 'segmented' use " +
          "a fixed tier ('full', 'medium', 'selective') or recompute",
      );
    }
    const recompute = tier.recompute;
    const adamw = resolveAdamW(options.adamw);
    const params = parameterSpecs(spec);

    const created: Session[] = [];
    try {
      const sessions = await openSegmentSessions(spec, dtype, recompute, adamw, options, created);
      // Nothing offloaded: no boundary between a block's forward and its backward is needed, so
      // the pass runs as one chain of the fused graph's gradients model (same recompute plan).
      // A custom store (openActivationStore) keeps the per-half-block segments it asked for.
      let chain: Session | null = null;
      if (store.target === 'keep' && options.openActivationStore === undefined) {
        chain = await createTrainingSession(
          buildTrainingModel({ spec, dtype, mode: 'gradients', recompute }).bytes,
          options,
        );
        created.push(chain);
      }
      const units = sessions.units;
      const parameters = startParameters({ given: options.parameters, params, spec, dtype, seed: options.seed });
      const unitNames = units.map((u) => u.name);
      const model: SegmentedTrainingModel = {
        spec,
        dtype,
        recompute,
        adamw,
        params,
        units: unitNames,
        segments: [
          ...(chain
            ? ['fwd+head+bwd']
            : [
                'embed.fwd',
                ...unitNames.map((u) => `${u}.fwd`),
                'head',
                ...unitNames.map((u) => `${u}.bwd`).reverse(),
                'embed.bwd',
              ]),
          'grad-norm',
          ...Array.from({ length: spec.nLayers }, (_, i) => `h.${i}.adamw`),
          'adamw',
        ],
      };
      const step = new SegmentedTrainStep(options, model, sessions, created, parameters, store, chain);
      step.tierText = tier.description;
      return step;
    } catch (err) {
      for (const s of created) await s.release().catch(() => undefined);
      throw err;
    }
  }

  /** Completed optimizer steps. */
  get step(): number {
    return this.completed;
  }

  /** The gradient-checkpointing tier in words (`full (every block)`, `recompute h.1`, `off`). */
  get tierDescription(): string {
    return this.tierText;
  }

  /** Always undefined: the budget tier is planned on the fused step only. */
  get budgetReport(): undefined {
    return undefined;
  }

  /**
   * Runs one training step on `batch` (all segments, then clipping + AdamW) and updates parameters
   * and moments. With `microBatchSize` m < G, the segments run once per micro-batch and their
   * weighted gradients are summed before the one clipping + AdamW (see `RunStepOptions`).
   */
  async run(batch: TrainBatch, opts: RunStepOptions = {}): Promise<StepResult> {
    this.assertLive();
    const t0 = performance.now();
    const lr = opts.lr ?? this.lr;
    checkLr(lr);
    if (opts.dataParallel !== undefined)
      throw new TrainInputError('data parallel runs the fused step only (execution: fused, no offload)');
    const micro = splitMicroBatches(batch, opts.microBatchSize);
    const nextStep = this.completed + 1;
    const t1 = performance.now();
    const { loss, grads, stats } = await accumulateMicroBatches(micro, (mb) =>
      this.pass(mb.batchSize, batchFeeds(this.spec, mb)),
    );
    const tOpt = performance.now();
    const { gradNorm } = await optimize(this.ctx, grads, lr, nextStep, batch.batchSize).catch((err: unknown) => {
      releaseBuffers(grads.values());
      // The optimizer writes one block's parameters and moments at a time: the state may be half updated.
      throw err instanceof TrainStepError
        ? new TrainStepError(err.message, { cause: err.cause ?? err, stateChanged: true })
        : err;
    });
    releaseBuffers(grads.values());
    const t2 = performance.now();
    this.completed = nextStep;
    this.lastStepStats = { ...stats, optimizerMs: t2 - tOpt };
    return reportStep(
      {
        step: nextStep,
        batchSize: batch.batchSize,
        tokens: batch.batchSize * this.spec.seqLen,
        loss,
        gradNorm,
        runMs: t2 - t1,
        totalMs: performance.now() - t0,
        lr,
        microBatchSize: micro[0]!.batch.batchSize,
        accumulation: micro.length,
        updateMs: t2 - tOpt,
      },
      this.options.measure,
    );
  }

  /**
   * One micro-batch of an accumulated step as `run` runs each of them: the segments' forward and
   * backward and its gradients summed into a sum kept between calls; no update. A step of a
   * micro-batches is a of these and one update (`updateMs`).
   */
  async microStep(batch: TrainBatch): Promise<{ totalMs: number }> {
    this.assertLive();
    const t0 = performance.now();
    const { grads, stats } = await this.pass(batch.batchSize, batchFeeds(this.spec, batch));
    sumInto(this.microSum, grads);
    this.lastStepStats = { ...stats, optimizerMs: 0 };
    return { totalMs: performance.now() - t0 };
  }

  /** Mean next-token loss of `batch` (the fused forward-only graph, created on first use). */
  async evaluate(batch: TrainBatch): Promise<number> {
    this.assertLive();
    const session = await this.aux('loss');
    const feeds = addParameterFeeds(batchFeeds(this.spec, batch), this.model.params, this.state, this.dtype);
    const out = await runSession(session, feeds, batch.batchSize);
    return Number(out[tensorNames.loss]!.data[0]);
  }

  /** Loss, global gradient norm and every parameter's gradient, through the segments (no update). */
  async gradients(batch: TrainBatch): Promise<{ loss: number; gradNorm: number; grads: Map<string, FloatArray> }> {
    this.assertLive();
    const { loss, grads, stats } = await this.pass(batch.batchSize, batchFeeds(this.spec, batch));
    const norm = await gradNorm(this.ctx, grads, batch.batchSize);
    this.lastStepStats = { ...stats, optimizerMs: 0 };
    return { loss, gradNorm: Number(norm.data[0]), grads };
  }

  /** Copies of the parameters, keyed by name, in `model.params` order. */
  getParameters(): Map<string, FloatArray> {
    return copyParameters(this.model.params, this.state);
  }

  /** A copy of everything a bit-exact resume needs. */
  getState(): TrainStepState {
    return copyState(this.model.params, this.state, this.completed);
  }

  /** Replaces parts of the state (validated: every tensor of a given map, right size and dtype). */
  setState(state: Partial<TrainStepState>): void {
    this.assertLive();
    const step = applyState(this.state, this.model.params, this.dtype, state);
    if (step !== undefined) this.completed = step;
  }

  /** Profiling is a fused-mode feature; a segmented step has no profile. */
  endProfiling(): string | undefined {
    return undefined;
  }

  /** Releases every ORT session. The step is unusable afterwards; no scratch file is left. */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    for (const s of this.allSessions) await s.release();
    for (const s of this.auxSessions.values()) await (await s).release();
    releaseBuffers(this.microSum.values());
  }

  /** Forward + backward: one chain when nothing is offloaded, else segment by segment through the store. */
  private pass(batchSize: number, feeds: Feeds): ReturnType<typeof forwardBackward> {
    return this.chain
      ? inMemoryPass(this.ctx, this.chain, batchSize, feeds, this.openStore)
      : forwardBackward(this.ctx, batchSize, feeds, this.openStore);
  }

  private aux(kind: 'loss'): Promise<Session> {
    let pending = this.auxSessions.get(kind);
    if (!pending) {
      const bytes = buildTrainingModel({ spec: this.spec, dtype: this.dtype, mode: 'loss' }).bytes;
      pending = createTrainingSession(
        bytes,
        { ...this.options, enableCpuMemArena: this.options.enableCpuMemArena ?? false },
        SEGMENT_SESSION_EXTRA,
      );
      this.auxSessions.set(kind, pending);
    }
    return pending;
  }

  private assertLive(): void {
    if (this.released) throw new TrainInputError('this SegmentedTrainStep was released');
  }
}

/** The fused loss-only session of `evaluate` (a plain session, not a segment). */
async function runSession(session: Session, feeds: Feeds, batchSize: number): Promise<Record<string, ort.Tensor>> {
  return runSegment(
    { inputNames: [], outputNames: [], run: async (f) => (await session.run(f)) as Record<string, ort.Tensor> },
    feeds,
    batchSize,
    'evaluate',
  );
}
