import { readdirSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import ort from 'onnxruntime-node';
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
import { resolveStepTier } from './_step-tier';
import type { AdamWOptions } from './adamw-options';
import { buildTrainingModel, type TrainingModel, type TrainingModelMode } from './build-training-model';
import { ExecutionProviderError, TrainInputError, TrainStepError } from './errors';
import type { GptSpec } from './gpt-spec';
import type { FloatArray } from './init-parameters';
import type { TrainBatch } from './make-synthetic-batch';
import type { BudgetTierReport } from './plan-budget-tier';
import type { GradientCheckpointingOption } from './resolve-recompute';
import { tensorNames } from './tensor-names';

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
}

type Session = Awaited<ReturnType<typeof ort.InferenceSession.create>>;

/** The session option that keeps recompute copies apart: without it ORT merges them back. */
export const DISABLE_CSE = { optimization: { disable_specified_optimizers: 'CommonSubexpressionElimination' } } as const;

const CUDA_HINT =
  'the CUDA execution provider is not installed in this onnxruntime-node: reinstall it with ' +
  '`npm install onnxruntime-node --onnxruntime-node-install=cuda12` (needs CUDA 12 and cuDNN 9), ' +
  "or use executionProvider: 'cpu'";

/** Session options for a training graph (shared by `TrainStep` and probes). */
export function trainingSessionOptions(o: {
  executionProvider?: ExecutionProviderName;
  deviceId?: number;
  intraOpNumThreads?: number;
  graphOptimizationLevel?: 'disabled' | 'basic' | 'extended' | 'all';
  profileFilePrefix?: string;
  enableCpuMemArena?: boolean;
  enableMemPattern?: boolean;
}): ort.InferenceSession.SessionOptions {
  const ep = o.executionProvider ?? 'cpu';
  if (ep !== 'cpu' && ep !== 'cuda') throw new TrainInputError(`executionProvider must be 'cpu' or 'cuda' (got ${JSON.stringify(ep)})`);
  const deviceId = o.deviceId ?? 0;
  if (!Number.isInteger(deviceId) || deviceId < 0) throw new TrainInputError(`deviceId must be a non-negative integer (got ${deviceId})`);
  const opts: ort.InferenceSession.SessionOptions = {
    executionProviders: ep === 'cuda' ? [{ name: 'cuda', deviceId }] : ['cpu'],
    graphOptimizationLevel: o.graphOptimizationLevel ?? 'all',
    logSeverityLevel: 3,
    extra: DISABLE_CSE,
  };
  if (o.intraOpNumThreads !== undefined) {
    if (!Number.isInteger(o.intraOpNumThreads) || o.intraOpNumThreads < 0) {
      throw new TrainInputError(`intraOpNumThreads must be a non-negative integer (got ${o.intraOpNumThreads})`);
    }
    opts.intraOpNumThreads = o.intraOpNumThreads;
  }
  if (o.enableCpuMemArena !== undefined) opts.enableCpuMemArena = o.enableCpuMemArena;
  opts.enableMemPattern = o.enableMemPattern ?? false;
  if (o.profileFilePrefix !== undefined) {
    opts.enableProfiling = true;
    opts.profileFilePrefix = o.profileFilePrefix;
  }
  return opts;
}

/** Creates an ORT session for a built model, turning a missing CUDA provider into `ExecutionProviderError`. */
export async function createTrainingSession(
  model: Uint8Array | string,
  options: Parameters<typeof trainingSessionOptions>[0],
  /** More ORT session config entries, merged over `DISABLE_CSE` (e.g. `{session: {intra_op: {allow_spinning: '0'}}}`). */
  extra?: Record<string, unknown>,
): Promise<Session> {
  const base = trainingSessionOptions(options);
  const sessionOptions = extra ? { ...base, extra: { ...base.extra, ...extra } } : base;
  try {
    return await (typeof model === 'string'
      ? ort.InferenceSession.create(model, sessionOptions)
      : ort.InferenceSession.create(model, sessionOptions));
  } catch (err) {
    const message = (err as Error).message ?? String(err);
    if ((options.executionProvider ?? 'cpu') === 'cuda' && /cuda|shared library|providers_shared|is unsupported/i.test(message)) {
      throw new ExecutionProviderError('cuda', `${CUDA_HINT} (ORT said: ${message})`, { cause: err });
    }
    throw new TrainStepError(`could not create the ONNX Runtime session: ${message}`, { cause: err });
  }
}

/** The parameters, the AdamW moments and the step counter: everything a resume needs. */
export interface TrainStepState {
  /** Completed optimizer steps. */
  step: number;
  parameters: Map<string, FloatArray>;
  m: Map<string, FloatArray>;
  v: Map<string, FloatArray>;
}

/**
 * One real training step (forward + backward + clipping + AdamW) as a single ONNX Runtime
 * session over a graph of standard operators. Owns the parameters and moments between steps.
 *
 * ```ts
 * const step = await TrainStep.create({ spec, seed: 1, intraOpNumThreads: 1 });
 * const { loss, gradNorm } = await step.run(makeSyntheticBatch({ spec, batchSize: 4 }));
 * ```
 */
export class TrainStep {
  readonly spec: GptSpec;
  readonly dtype: FloatDType;
  readonly model: TrainingModel;
  readonly executionProvider: ExecutionProviderName;
  readonly gpuMemLimitBytes: number | undefined;
  /** Learning rate used by `run()` when none is passed. */
  lr: number;
  private readonly session: Session;
  private readonly options: TrainStepOptions;
  private readonly state = new Map<string, FloatArray>();
  private readonly auxSessions = new Map<TrainingModelMode, Promise<Session>>();
  private completed = 0;
  private tierReport: { description: string; budget: BudgetTierReport | undefined } = { description: 'off', budget: undefined };
  private released = false;

  private constructor(options: TrainStepOptions, model: TrainingModel, session: Session, parameters: Map<string, FloatArray>) {
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

  /** Builds the graph, creates the session and initialises (or copies in) the parameters. */
  static async create(options: TrainStepOptions): Promise<TrainStep> {
    checkGpuMemLimit(options.gpuMemLimitBytes);
    const tier = await resolveStepTier(options);
    const model = buildTrainingModel({
      spec: options.spec,
      ...(options.dtype !== undefined ? { dtype: options.dtype } : {}),
      recompute: tier.recompute,
      ...(options.adamw !== undefined ? { adamw: options.adamw } : {}),
      mode: 'train',
    });
    const session = await createTrainingSession(model.bytes, options);
    const parameters = startParameters({ given: options.parameters, params: model.params, spec: model.spec, dtype: model.dtype, seed: options.seed });
    const step = new TrainStep(options, model, session, parameters);
    step.tierReport = { description: tier.description, budget: tier.budgetReport };
    return step;
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

  /** Runs one training step on `batch` and updates parameters and moments. */
  async run(batch: TrainBatch, opts: { lr?: number } = {}): Promise<StepResult> {
    this.assertLive();
    const t0 = performance.now();
    const lr = opts.lr ?? this.lr;
    checkLr(lr);
    const nextStep = this.completed + 1;
    const feeds = { ...batchFeeds(this.spec, batch), ...optimizerFeeds(this.dtype, lr, nextStep) };
    for (const p of this.model.params) {
      for (const name of [p.name, tensorNames.adamM(p.name), tensorNames.adamV(p.name)]) {
        feeds[name] = new ort.Tensor(this.dtype, this.state.get(name)!, p.shape);
      }
    }
    const t1 = performance.now();
    const out = await this.runSession(this.session, feeds, batch.batchSize);
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
      },
      this.options.measure,
    );
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
    this.session.endProfiling();
    const prefix = resolve(this.options.profileFilePrefix);
    const dir = dirname(prefix);
    const base = `${basename(prefix)}_`;
    let best: { path: string; mtimeMs: number } | undefined;
    for (const f of readdirSync(dir)) {
      if (!f.startsWith(base) || !f.endsWith('.json')) continue;
      const path = join(dir, f);
      const { mtimeMs } = statSync(path);
      if (!best || mtimeMs >= best.mtimeMs) best = { path, mtimeMs };
    }
    return best?.path;
  }

  /** Releases the ORT sessions. The step is unusable afterwards. */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    await this.session.release();
    for (const s of this.auxSessions.values()) await (await s).release();
  }

  private assertLive(): void {
    if (this.released) throw new TrainInputError('this TrainStep was released');
  }

  private async runAux(mode: 'loss' | 'gradients', batch: TrainBatch): Promise<Record<string, ort.Tensor>> {
    this.assertLive();
    let pending = this.auxSessions.get(mode);
    if (!pending) {
      const model = buildTrainingModel({ spec: this.spec, dtype: this.dtype, recompute: this.model.recompute, mode });
      pending = createTrainingSession(model.bytes, { ...this.options, profileFilePrefix: undefined } as TrainStepOptions);
      this.auxSessions.set(mode, pending);
    }
    const session = await pending;
    const feeds = addParameterFeeds(batchFeeds(this.spec, batch), this.model.params, this.state, this.dtype);
    return this.runSession(session, feeds, batch.batchSize);
  }

  private async runSession(session: Session, feeds: Record<string, ort.Tensor>, batchSize: number): Promise<Record<string, ort.Tensor>> {
    try {
      return (await session.run(feeds)) as Record<string, ort.Tensor>;
    } catch (err) {
      const message = (err as Error).message ?? String(err);
      throw new TrainStepError(`training step failed at batch size ${batchSize}: ${message}`, { cause: err });
    }
  }
}
