// The fused training step: one ONNX Runtime session runs forward + backward + clipping + AdamW.
// `TrainStep` (train-step.ts) adds the gradient-checkpointing tier resolution on top; the budget
// planner measures `FusedTrainStep`s with explicit recompute sets, so it never imports train-step.
import ort from 'onnxruntime-node';
import { newestProfile } from './_fs';
import type { FloatDType } from './_graph';
import {
  addParameterFeeds,
  applyState,
  batchFeeds,
  checkGpuMemLimit,
  checkLr,
  copyParameters,
  copyState,
  fillInitialState,
  optimizerFeeds,
  reportStep,
  startParameters,
} from './_step-common';
import { createTrainingSession } from './_training-session';
import { buildTrainingModel, type TrainingModel, type TrainingModelMode } from './build-training-model';
import { TrainInputError, TrainStepError } from './errors';
import type { GptSpec } from './gpt-spec';
import type { FloatArray } from './init-parameters';
import type { TrainBatch } from './make-synthetic-batch';
import type {
  BudgetTierReport,
  DataParallel,
  ExecutionProviderName,
  MicroBatchResult,
  RunStepOptions,
  StepResult,
  StepTier,
  TrainStepOptions,
  TrainStepState,
} from './step-types';
import { addScaled, checkDataParallel, splitMicroBatches, sumInto, type MicroBatch } from './_accumulate';
import { buildOptimizerModel } from './_optimizer-model';
import { releaseBuffers } from './_release-buffers';
import { tensorNames } from './tensor-names';

type Session = Awaited<ReturnType<typeof ort.InferenceSession.create>>;

/**
 * One real training step (forward + backward + clipping + AdamW) as a single ONNX Runtime
 * session over a graph of standard operators. Owns the parameters and moments between steps.
 *
 * ```ts
 * const step = await TrainStep.create({ spec, seed: 1, intraOpNumThreads: 1 });
 * const { loss, gradNorm } = await step.run(makeSyntheticBatch({ spec, batchSize: 4 }));
 * ```
 */
export class FusedTrainStep {
  readonly spec: GptSpec;
  readonly dtype: FloatDType;
  readonly model: TrainingModel;
  readonly executionProvider: ExecutionProviderName;
  readonly gpuMemLimitBytes: number | undefined;
  /** Learning rate used by `run()` when none is passed. */
  lr: number;
  /** The whole step's session; null until its first whole step with `deferSession`. */
  private readonly session: Session | null;
  private readonly options: TrainStepOptions;
  private readonly state = new Map<string, FloatArray>();
  /** microStep's sum of gradients (what an accumulated step sums into), kept between its calls. */
  private readonly microSum = new Map<string, FloatArray>();
  private readonly auxSessions = new Map<TrainingModelMode | 'optimizer', Promise<Session>>();
  private completed = 0;
  private tierReport: { description: string; budget: BudgetTierReport | undefined } = {
    description: 'off',
    budget: undefined,
  };
  private released = false;

  protected constructor(
    options: TrainStepOptions,
    model: TrainingModel,
    session: Session | null,
    parameters: Map<string, FloatArray>,
  ) {
    this.options = options;
    this.spec = model.spec;
    this.dtype = model.dtype;
    this.model = model;
    this.session = session;
    this.executionProvider = options.executionProvider ?? 'cpu';
    this.gpuMemLimitBytes = options.gpuMemLimitBytes;
    this.lr = options.lr ?? 1e-3;
    fillInitialState(this.state, model.params, parameters, model.dtype);
  }

  /** Builds the graph with a resolved tier, creates the session and initialises (or copies in) the parameters. */
  protected static async prepare(
    options: TrainStepOptions,
    tier: StepTier,
  ): Promise<{ model: TrainingModel; session: Session | null; parameters: Map<string, FloatArray> }> {
    checkGpuMemLimit(options.gpuMemLimitBytes);
    const model = buildTrainingModel({
      spec: options.spec,
      ...(options.dtype !== undefined ? { dtype: options.dtype } : {}),
      recompute: tier.recompute,
      ...(options.adamw !== undefined ? { adamw: options.adamw } : {}),
      mode: 'train',
    });
    const session = options.deferSession ? null : await createTrainingSession(model.bytes, options);
    const parameters = startParameters({
      given: options.parameters,
      params: model.params,
      spec: model.spec,
      dtype: model.dtype,
      seed: options.seed,
    });
    return { model, session, parameters };
  }

  /**
   * A step with an explicit recompute set (`options.recompute`); no tier is resolved (the budget planner measures
   * these).
   */
  static async createExplicit(options: TrainStepOptions): Promise<FusedTrainStep> {
    const recompute = [...(options.recompute ?? [])];
    const tier: StepTier = {
      recompute,
      description: recompute.length ? `recompute ${recompute.join(', ')}` : 'off',
      budgetReport: undefined,
    };
    const { model, session, parameters } = await FusedTrainStep.prepare(options, tier);
    const step = new FusedTrainStep(options, model, session, parameters);
    step.setTier(tier);
    return step;
  }

  protected setTier(tier: StepTier): void {
    this.tierReport = { description: tier.description, budget: tier.budgetReport };
  }

  /** The budget tier's plan and measurements, when the step was created with `{tier: 'budget'}`. */
  get budgetReport(): BudgetTierReport | undefined {
    return this.tierReport.budget;
  }

  /** The gradient-checkpointing tier in words (`full (every block)`, `recompute h.1`, `off`). */
  get tierDescription(): string {
    return this.tierReport.description;
  }

  /** Completed optimizer steps. */
  get step(): number {
    return this.completed;
  }

  /**
   * Runs one training step on `batch` and updates parameters and moments. With
   * `microBatchSize` m < G (the batch's size), the gradients of the G / m micro-batches are
   * accumulated (the `gradients` graph per micro-batch), then clipped and applied once (an
   * optimizer-only graph): the same update as one step over the whole batch.
   */
  async run(batch: TrainBatch, opts: RunStepOptions = {}): Promise<StepResult> {
    this.assertLive();
    const t0 = performance.now();
    const lr = opts.lr ?? this.lr;
    checkLr(lr);
    const nextStep = this.completed + 1;
    const micro = splitMicroBatches(batch, opts.microBatchSize);
    const dp = opts.dataParallel;
    if (dp !== undefined) checkDataParallel(dp, micro.length);
    if (micro.length > 1) return this.runAccumulated(batch, micro, lr, nextStep, t0, dp);
    const feeds = { ...batchFeeds(this.spec, batch), ...optimizerFeeds(this.dtype, lr, nextStep) };
    for (const p of this.model.params) {
      for (const name of [p.name, tensorNames.adamM(p.name), tensorNames.adamV(p.name)]) {
        feeds[name] = new ort.Tensor(this.dtype, this.state.get(name)!, p.shape);
      }
    }
    const t1 = performance.now();
    const out = await this.runSession(this.session ?? (await this.aux('train')), feeds, batch.batchSize);
    const t2 = performance.now();
    for (const p of this.model.params) {
      for (const name of [p.name, tensorNames.adamM(p.name), tensorNames.adamV(p.name)]) {
        this.state.set(name, out[tensorNames.updated(name)]!.data as FloatArray);
      }
    }
    this.completed = nextStep;
    return reportStep(
      {
        step: nextStep,
        batchSize: batch.batchSize,
        tokens: batch.batchSize * this.spec.seqLen,
        loss: Number(out[tensorNames.loss]!.data[0]),
        gradNorm: Number(out[tensorNames.gradNorm]!.data[0]),
        runMs: t2 - t1,
        totalMs: performance.now() - t0,
        lr,
        microBatchSize: batch.batchSize,
        accumulation: 1,
        updateMs: null,
      },
      this.options.measure,
    );
  }

  /**
   * Sums the micro-batches' weighted gradients, then one clipping + AdamW update; the state changes only at the end.
   */
  private async runAccumulated(
    batch: TrainBatch,
    micro: MicroBatch[],
    lr: number,
    nextStep: number,
    t0: number,
    dp?: DataParallel,
  ): Promise<StepResult> {
    const t1 = performance.now();
    const gradSession = await this.aux('gradients');
    const acc = new Map<string, FloatArray>();
    let loss = 0;
    const pass = async (mb: MicroBatch): Promise<MicroBatchResult> => {
      const feeds = addParameterFeeds(batchFeeds(this.spec, mb.batch), this.model.params, this.state, this.dtype);
      const out = await this.runSession(gradSession, feeds, mb.batch.batchSize);
      const grads = this.model.params.map((p) => out[tensorNames.grad(p.name)]!.data as FloatArray);
      return { loss: Number(out[tensorNames.loss]!.data[0]), grads };
    };
    const fold = (mb: MicroBatch, r: MicroBatchResult): void => {
      loss += mb.weight * r.loss;
      this.model.params.forEach((p, i) => {
        const g = r.grads[i]!;
        const had = acc.get(p.name);
        acc.set(p.name, addScaled(had, g, mb.weight));
        if (had !== undefined) releaseBuffers([g]);
      });
    };
    try {
      if (dp === undefined) for (const mb of micro) fold(mb, await pass(mb));
      else {
        const share = micro.length / dp.worldSize;
        const mine: MicroBatchResult[] = [];
        for (const mb of micro.slice(dp.rank * share, (dp.rank + 1) * share)) mine.push(await pass(mb));
        const all = await dp.exchange(mine);
        if (all.length !== micro.length)
          throw new TrainInputError(`data parallel: ${all.length} micro-batch results for ${micro.length}`);
        for (const [i, mb] of micro.entries()) fold(mb, all[i]!);
      }
      const tUpdate = performance.now();
      const feeds = optimizerFeeds(this.dtype, lr, nextStep);
      for (const p of this.model.params) {
        for (const name of [p.name, tensorNames.adamM(p.name), tensorNames.adamV(p.name)]) {
          feeds[name] = new ort.Tensor(this.dtype, this.state.get(name)!, p.shape);
        }
        feeds[tensorNames.grad(p.name)] = new ort.Tensor(this.dtype, acc.get(p.name)!, p.shape);
      }
      const out = await this.runSession(await this.aux('optimizer'), feeds, batch.batchSize);
      const t2 = performance.now();
      for (const p of this.model.params) {
        for (const name of [p.name, tensorNames.adamM(p.name), tensorNames.adamV(p.name)]) {
          this.state.set(name, out[tensorNames.updated(name)]!.data as FloatArray);
        }
      }
      this.completed = nextStep;
      return reportStep(
        {
          step: nextStep,
          batchSize: batch.batchSize,
          tokens: batch.batchSize * this.spec.seqLen,
          loss,
          gradNorm: Number(out[tensorNames.gradNorm]!.data[0]),
          runMs: t2 - t1,
          totalMs: performance.now() - t0,
          lr,
          microBatchSize: micro[0]!.batch.batchSize,
          accumulation: micro.length,
          updateMs: performance.now() - tUpdate,
        },
        this.options.measure,
      );
    } finally {
      releaseBuffers(acc.values());
    }
  }

  /**
   * One micro-batch of an accumulated step as `run` runs each of them: its forward/backward (the
   * gradients graph) and its gradients summed into a sum kept between calls; no update (the
   * parameters and moments do not change). A step of a micro-batches is a of these and one update
   * (`updateMs`): what a tuner times at m without running all a.
   */
  async microStep(batch: TrainBatch): Promise<{ totalMs: number }> {
    this.assertLive();
    const t0 = performance.now();
    const out = await this.runAux('gradients', batch);
    sumInto(
      this.microSum,
      this.model.params.map((p) => [p.name, out[tensorNames.grad(p.name)]!.data as FloatArray]),
    );
    return { totalMs: performance.now() - t0 };
  }

  /** Mean next-token loss of `batch` under the current parameters (a forward-only session, created on first use). */
  async evaluate(batch: TrainBatch): Promise<number> {
    const out = await this.runAux('loss', batch);
    return Number(out[tensorNames.loss]!.data[0]);
  }

  /** Loss, global gradient norm and every parameter's gradient at the current parameters (no update). */
  async gradients(batch: TrainBatch): Promise<{ loss: number; gradNorm: number; grads: Map<string, FloatArray> }> {
    const out = await this.runAux('gradients', batch);
    const grads = new Map<string, FloatArray>();
    for (const p of this.model.params) grads.set(p.name, out[tensorNames.grad(p.name)]!.data as FloatArray);
    return {
      loss: Number(out[tensorNames.loss]!.data[0]),
      gradNorm: Number(out[tensorNames.gradNorm]!.data[0]),
      grads,
    };
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

  /**
   * Ends ORT profiling (when `profileFilePrefix` was set) and returns the profile's path: a
   * Chrome-trace JSON whose `Node` events carry per-node kernel times.
   */
  endProfiling(): string | undefined {
    if (this.options.profileFilePrefix === undefined) return undefined;
    this.session?.endProfiling();
    return newestProfile(this.options.profileFilePrefix);
  }

  /** Releases the ORT sessions. The step is unusable afterwards. */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    await this.session?.release();
    for (const s of this.auxSessions.values()) await (await s).release();
    releaseBuffers(this.microSum.values());
  }

  private assertLive(): void {
    if (this.released) throw new TrainInputError('this TrainStep was released');
  }

  /**
   * A session created on first use: the forward-only or gradients graph, the optimizer-only graph,
   * or the whole step's (`deferSession`).
   */
  private aux(mode: TrainingModelMode | 'optimizer'): Promise<Session> {
    let pending = this.auxSessions.get(mode);
    if (!pending) {
      const bytes =
        mode === 'optimizer'
          ? buildOptimizerModel(this.model.params, this.dtype, this.model.adamw)
          : mode === 'train'
            ? this.model.bytes
            : buildTrainingModel({ spec: this.spec, dtype: this.dtype, recompute: this.model.recompute, mode }).bytes;
      pending = createTrainingSession(bytes, { ...this.options, profileFilePrefix: undefined } as TrainStepOptions);
      this.auxSessions.set(mode, pending);
    }
    return pending;
  }

  private async runAux(mode: 'loss' | 'gradients', batch: TrainBatch): Promise<Record<string, ort.Tensor>> {
    this.assertLive();
    const session = await this.aux(mode);
    const feeds = addParameterFeeds(batchFeeds(this.spec, batch), this.model.params, this.state, this.dtype);
    return this.runSession(session, feeds, batch.batchSize);
  }

  private async runSession(
    session: Session,
    feeds: Record<string, ort.Tensor>,
    batchSize: number,
  ): Promise<Record<string, ort.Tensor>> {
    try {
      return (await session.run(feeds)) as Record<string, ort.Tensor>;
    } catch (err) {
      const message = (err as Error).message ?? String(err);
      throw new TrainStepError(`training step failed at batch size ${batchSize}: ${message}`, { cause: err });
    }
  }
}
