import {
  ActivationStore,
  checkOffloadConfig,
  type ActivationHandle,
  type ActivationStoreStats,
  type OffloadTarget,
  type OffloadTensor,
} from '@soup/offload';
import ort from 'onnxruntime-node';
import type { FloatDType } from './_graph';
import {
  blockVariant,
  buildBlockSegments,
  buildEmbedBackward,
  buildEmbedForward,
  buildHead,
  buildOptimizer,
  variantKey,
  type SavedSlot,
  type SegmentModel,
} from './_segments';
import { resolveAdamW, type ResolvedAdamW } from './adamw-options';
import { buildTrainingModel, normalizeRecompute } from './build-training-model';
import { TrainInputError, TrainStepError } from './errors';
import { assertGptSpec, type GptSpec } from './gpt-spec';
import { initParameters, type FloatArray } from './init-parameters';
import type { TrainBatch } from './make-synthetic-batch';
import { parameterSpecs, shapeSize, type ParamSpec } from './parameter-specs';
import { tensorNames } from './tensor-names';
import { createTrainingSession, type StepResult, type TrainStepOptions, type TrainStepState } from './train-step';

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
   * ORT's CPU arena in the segment sessions. Off by default here: each session would keep its own
   * arena at its largest run, and the arenas of a dozen sessions add up to more than the fused
   * step's one. @default false
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
  /** Recompute variant of each block (`none`, `attn`, `mlp`, `attn+mlp`, `full`); blocks of one variant share their sessions. */
  blockVariants: string[];
  /** Segments in execution order. */
  segments: string[];
}

/** Counters of the last step of a {@link SegmentedTrainStep}. */
export interface SegmentedStepStats {
  /** The activation store's counters at the end of the step (bytes packed, peak resident / disk bytes, files). */
  store: ActivationStoreStats;
  /** Embedding + block forwards. */
  forwardMs: number;
  /** LM head + loss, forward and backward. */
  headMs: number;
  /** Block backwards + embedding backward. */
  backwardMs: number;
  /** Time spent in `pack` (part of forwardMs). */
  packMs: number;
  /** Time spent in `unpack` (part of backwardMs). */
  unpackMs: number;
  /** Clipping + AdamW. */
  optimizerMs: number;
}

type Session = Awaited<ReturnType<typeof ort.InferenceSession.create>>;
type Feeds = Record<string, ort.Tensor>;

interface BlockSessions {
  forward: Session;
  backward: Session;
  saved: SavedSlot[];
}

interface Sessions {
  embedForward: Session;
  embedBackward: Session;
  head: Session;
  /** Per block index (blocks of one variant share the object). */
  blocks: BlockSessions[];
  optimizer: Session;
}

const TARGETS: readonly string[] = ['keep', 'cpu', 'disk'];

/**
 * The training step in segments: one ONNX Runtime session per segment (embedding forward, each
 * block's forward, LM head + loss, each block's backward, embedding backward, optimizer), each
 * block's saved activations passed through an `ActivationStore` (`keep` / `cpu` / `disk`)
 * between its forward and its backward. A recompute plan applies as in the fused graph: a
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
  private readonly sessions: Sessions;
  private readonly allSessions: Session[];
  private readonly state = new Map<string, FloatArray>();
  private readonly auxSessions = new Map<'loss' | 'norm', Promise<Session>>();
  private readonly openStore: () => ActivationStore;
  private completed = 0;
  private released = false;

  private constructor(
    options: SegmentedTrainStepOptions,
    model: SegmentedTrainingModel,
    sessions: Sessions,
    allSessions: Session[],
    parameters: Map<string, FloatArray>,
    store: { open: () => ActivationStore; target: OffloadTarget; saveDir: string | null; warnings: string[] },
  ) {
    this.options = options;
    this.spec = model.spec;
    this.dtype = model.dtype;
    this.model = model;
    this.sessions = sessions;
    this.allSessions = allSessions;
    this.executionProvider = options.executionProvider ?? 'cpu';
    this.gpuMemLimitBytes = options.gpuMemLimitBytes;
    this.lr = options.lr ?? 1e-3;
    this.openStore = store.open;
    this.offload = { target: store.target, saveDir: store.saveDir };
    this.offloadWarnings = store.warnings;
    for (const p of model.params) {
      const n = shapeSize(p.shape);
      this.state.set(p.name, parameters.get(p.name)!);
      this.state.set(tensorNames.adamM(p.name), this.zeros(n));
      this.state.set(tensorNames.adamV(p.name), this.zeros(n));
    }
  }

  /**
   * Checks the offload config, builds the segment graphs, creates their sessions and initialises
   * (or copies in) the parameters.
   * @throws {TrainInputError} a bad option; an offload config @soup/offload refuses, with its messages
   */
  static async create(options: SegmentedTrainStepOptions): Promise<SegmentedTrainStep> {
    assertGptSpec(options.spec);
    if (options.gpuMemLimitBytes !== undefined && !(Number.isInteger(options.gpuMemLimitBytes) && options.gpuMemLimitBytes > 0)) {
      throw new TrainInputError(`gpuMemLimitBytes must be a positive integer (got ${options.gpuMemLimitBytes})`);
    }
    if (options.profileFilePrefix !== undefined) {
      throw new TrainInputError("profileFilePrefix: ORT profiling is supported for execution: 'fused' only (a segmented step runs a dozen sessions)");
    }
    const store = resolveStore(options);
    const spec = { ...options.spec };
    const dtype = options.dtype ?? 'float32';
    if (dtype !== 'float32' && dtype !== 'float64') throw new TrainInputError(`dtype must be 'float32' or 'float64' (got ${String(dtype)})`);
    const recompute = normalizeRecompute(spec, options.recompute ?? []);
    const adamw = resolveAdamW(options.adamw);
    const params = parameterSpecs(spec);

    const sessionOptions = { ...options, enableCpuMemArena: options.enableCpuMemArena ?? false };
    const created: Session[] = [];
    const open = async (m: SegmentModel): Promise<Session> => {
      const s = await createTrainingSession(m.bytes, sessionOptions);
      created.push(s);
      return s;
    };
    try {
      const byVariant = new Map<string, BlockSessions>();
      const blocks: BlockSessions[] = [];
      for (let i = 0; i < spec.nLayers; i++) {
        const v = blockVariant(recompute, i);
        const key = variantKey(v);
        let b = byVariant.get(key);
        if (!b) {
          const seg = buildBlockSegments(spec, dtype, v);
          b = { forward: await open(seg.forward), backward: await open(seg.backward), saved: seg.saved };
          byVariant.set(key, b);
        }
        blocks.push(b);
      }
      const sessions: Sessions = {
        embedForward: await open(buildEmbedForward(spec, dtype)),
        embedBackward: await open(buildEmbedBackward(spec, dtype)),
        head: await open(buildHead(spec, dtype)),
        blocks,
        optimizer: await open(buildOptimizer(spec, dtype, adamw, 'adamw')),
      };
      let parameters: Map<string, FloatArray>;
      if (options.parameters) {
        parameters = new Map();
        for (const p of params) {
          const src = options.parameters.get(p.name);
          checkTensor(`parameters ${p.name}`, src, p, dtype);
          parameters.set(p.name, src!.slice());
        }
      } else {
        parameters = initParameters({ spec, seed: options.seed ?? 0, dtype });
      }
      const blockVariants = Array.from({ length: spec.nLayers }, (_, i) => variantKey(blockVariant(recompute, i)));
      const model: SegmentedTrainingModel = {
        spec,
        dtype,
        recompute,
        adamw,
        params,
        blockVariants,
        segments: [
          'embed.fwd',
          ...blockVariants.map((_, i) => `h.${i}.fwd`),
          'head',
          ...blockVariants.map((_, i) => `h.${i}.bwd`).reverse(),
          'embed.bwd',
          'optimizer',
        ],
      };
      return new SegmentedTrainStep(options, model, sessions, created, parameters, store);
    } catch (err) {
      for (const s of created) await s.release().catch(() => undefined);
      throw err;
    }
  }

  /** Completed optimizer steps. */
  get step(): number {
    return this.completed;
  }

  /** Runs one training step on `batch` (all segments, then clipping + AdamW) and updates parameters and moments. */
  async run(batch: TrainBatch, opts: { lr?: number } = {}): Promise<StepResult> {
    this.assertLive();
    const t0 = performance.now();
    const lr = opts.lr ?? this.lr;
    if (!Number.isFinite(lr) || lr < 0) throw new TrainInputError(`lr must be a finite number ≥ 0 (got ${lr})`);
    const batchFeeds = this.batchFeeds(batch);
    const nextStep = this.completed + 1;
    const t1 = performance.now();
    const { loss, grads, stats } = await this.forwardBackward(batch.batchSize, batchFeeds);
    const tOpt = performance.now();
    const feeds: Feeds = {
      [tensorNames.lr]: new ort.Tensor(this.dtype, this.dtype === 'float64' ? Float64Array.of(lr) : Float32Array.of(lr), []),
      [tensorNames.step]: new ort.Tensor('int64', BigInt64Array.of(BigInt(nextStep)), []),
    };
    for (const p of this.model.params) {
      for (const name of [p.name, tensorNames.adamM(p.name), tensorNames.adamV(p.name)]) {
        feeds[name] = new ort.Tensor(this.dtype, this.state.get(name)!, p.shape);
      }
      feeds[tensorNames.grad(p.name)] = new ort.Tensor(this.dtype, grads.get(p.name)!, p.shape);
    }
    const out = await this.runSegment(this.sessions.optimizer, feeds, batch.batchSize, 'optimizer');
    const t2 = performance.now();
    for (const p of this.model.params) {
      for (const name of [p.name, tensorNames.adamM(p.name), tensorNames.adamV(p.name)]) {
        this.state.set(name, out[tensorNames.updated(name)]!.data as FloatArray);
      }
    }
    this.completed = nextStep;
    this.lastStepStats = { ...stats, optimizerMs: t2 - tOpt };
    const result: StepResult = {
      step: nextStep,
      batchSize: batch.batchSize,
      tokens: batch.batchSize * this.spec.seqLen,
      loss,
      gradNorm: Number(out[tensorNames.gradNorm]!.data[0]),
      runMs: t2 - t1,
      totalMs: performance.now() - t0,
      lr,
    };
    this.options.measure?.({
      step: result.step,
      batchSize: result.batchSize,
      tokens: result.tokens,
      loss: result.loss,
      gradNorm: result.gradNorm,
      runMs: result.runMs,
      totalMs: result.totalMs,
    });
    return result;
  }

  /** Mean next-token loss of `batch` (the fused forward-only graph, created on first use). */
  async evaluate(batch: TrainBatch): Promise<number> {
    this.assertLive();
    const session = await this.aux('loss');
    const feeds = this.batchFeeds(batch);
    for (const p of this.model.params) feeds[p.name] = new ort.Tensor(this.dtype, this.state.get(p.name)!, p.shape);
    const out = await this.runSegment(session, feeds, batch.batchSize, 'evaluate');
    return Number(out[tensorNames.loss]!.data[0]);
  }

  /** Loss, global gradient norm and every parameter's gradient, through the segments (no update). */
  async gradients(batch: TrainBatch): Promise<{ loss: number; gradNorm: number; grads: Map<string, FloatArray> }> {
    this.assertLive();
    const { loss, grads, stats } = await this.forwardBackward(batch.batchSize, this.batchFeeds(batch));
    const session = await this.aux('norm');
    const feeds: Feeds = {};
    for (const p of this.model.params) feeds[tensorNames.grad(p.name)] = new ort.Tensor(this.dtype, grads.get(p.name)!, p.shape);
    const out = await this.runSegment(session, feeds, batch.batchSize, 'grad norm');
    this.lastStepStats = { ...stats, optimizerMs: 0 };
    return { loss, gradNorm: Number(out[tensorNames.gradNorm]!.data[0]), grads };
  }

  /** Copies of the parameters, keyed by name, in `model.params` order. */
  getParameters(): Map<string, FloatArray> {
    const out = new Map<string, FloatArray>();
    for (const p of this.model.params) out.set(p.name, this.state.get(p.name)!.slice());
    return out;
  }

  /** A copy of everything a bit-exact resume needs. */
  getState(): TrainStepState {
    const m = new Map<string, FloatArray>();
    const v = new Map<string, FloatArray>();
    for (const p of this.model.params) {
      m.set(p.name, this.state.get(tensorNames.adamM(p.name))!.slice());
      v.set(p.name, this.state.get(tensorNames.adamV(p.name))!.slice());
    }
    return { step: this.completed, parameters: this.getParameters(), m, v };
  }

  /** Replaces parts of the state (validated: every tensor of a given map, right size and dtype). */
  setState(state: Partial<TrainStepState>): void {
    this.assertLive();
    if (state.step !== undefined && (!Number.isInteger(state.step) || state.step < 0)) {
      throw new TrainInputError(`step must be a non-negative integer (got ${state.step})`);
    }
    const updates: [string, FloatArray][] = [];
    const take = (label: string, map: ReadonlyMap<string, FloatArray> | undefined, key: (p: string) => string): void => {
      if (!map) return;
      for (const p of this.model.params) {
        const src = map.get(p.name);
        checkTensor(`${label} ${p.name}`, src, p, this.dtype);
        updates.push([key(p.name), src!.slice()]);
      }
    };
    take('parameters', state.parameters, (p) => p);
    take('m', state.m, tensorNames.adamM);
    take('v', state.v, tensorNames.adamV);
    for (const [k, arr] of updates) this.state.set(k, arr);
    if (state.step !== undefined) this.completed = state.step;
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
  }

  /**
   * Embedding forward, block forwards (saved tensors packed into a fresh store), head, block
   * backwards (unpacked, last block first), embedding backward. The store is closed whatever
   * happens, so no scratch file outlives the call.
   */
  private async forwardBackward(
    batchSize: number,
    batchFeeds: Feeds,
  ): Promise<{ loss: number; grads: Map<string, FloatArray>; stats: Omit<SegmentedStepStats, 'optimizerMs'> }> {
    const { sessions, spec } = this;
    const store = this.openStore();
    let packMs = 0;
    let unpackMs = 0;
    try {
      const t0 = performance.now();
      let x = (await this.runSegment(sessions.embedForward, this.feeds(sessions.embedForward, { [tensorNames.inputIds]: batchFeeds[tensorNames.inputIds]! }), batchSize, 'wte+wpe forward')).y!;
      const handles: Map<string, ActivationHandle>[] = [];
      for (let i = 0; i < spec.nLayers; i++) {
        const b = sessions.blocks[i]!;
        const out = await this.runSegment(b.forward, this.feeds(b.forward, { x }, `h.${i}.`), batchSize, `h.${i} forward`);
        const tp = performance.now();
        const saved = new Map<string, ActivationHandle>();
        for (const slot of b.saved) {
          const t = slot.fromInput ? x : out[`saved.${slot.key}`]!;
          saved.set(slot.key, store.pack(toOffload(t)));
        }
        packMs += performance.now() - tp;
        handles.push(saved);
        x = out.y!;
      }
      const t1 = performance.now();
      const headFeeds = this.feeds(sessions.head, { x, [tensorNames.labels]: batchFeeds[tensorNames.labels]! });
      const head = await this.runSegment(sessions.head, headFeeds, batchSize, 'ln_f + lm_head');
      const loss = Number(head[tensorNames.loss]!.data[0]);
      const grads = new Map<string, FloatArray>();
      const headW = spec.tieEmbeddings ? 'wte.weight' : 'lm_head.weight';
      for (const p of ['ln_f.weight', 'ln_f.bias', headW]) grads.set(p, head[tensorNames.grad(p)]!.data as FloatArray);
      let dy = head.dx!;
      const t2 = performance.now();
      for (let i = spec.nLayers - 1; i >= 0; i--) {
        const b = sessions.blocks[i]!;
        const saved = handles[i]!;
        const feeds: Feeds = { dy };
        const tu = performance.now();
        for (const slot of b.saved) feeds[`saved.${slot.key}`] = toOrt(store.unpack(saved.get(slot.key)!));
        unpackMs += performance.now() - tu;
        handles[i] = new Map();
        const out = await this.runSegment(b.backward, this.feeds(b.backward, feeds, `h.${i}.`), batchSize, `h.${i} backward`);
        for (const name of b.backward.outputNames) {
          if (name.startsWith('grad.')) grads.set(`h.${i}.${name.slice('grad.'.length)}`, out[name]!.data as FloatArray);
        }
        dy = out.dx!;
      }
      const embFeeds = this.feeds(sessions.embedBackward, { [tensorNames.inputIds]: batchFeeds[tensorNames.inputIds]!, dy });
      const emb = await this.runSegment(sessions.embedBackward, embFeeds, batchSize, 'wte+wpe backward');
      grads.set('wpe.weight', emb[tensorNames.grad('wpe.weight')]!.data as FloatArray);
      const dwte = emb[tensorNames.grad('wte.weight')]!.data as FloatArray;
      const headPart = spec.tieEmbeddings ? grads.get('wte.weight') : undefined;
      if (headPart) {
        // The fused graph's Sum of the two parts: one IEEE addition each, so exactly the same values.
        const sum = this.zeros(dwte.length);
        for (let k = 0; k < sum.length; k++) sum[k] = headPart[k]! + dwte[k]!;
        grads.set('wte.weight', sum);
      } else {
        grads.set('wte.weight', dwte);
      }
      const t3 = performance.now();
      return {
        loss,
        grads,
        stats: { store: store.stats, forwardMs: t1 - t0, headMs: t2 - t1, backwardMs: t3 - t2, packMs, unpackMs },
      };
    } finally {
      store.close();
    }
  }

  /**
   * `extra` plus every parameter `session` reads; block sessions name their parameters relative
   * to the block, so `prefix` (`h.<i>.`) is put back in front.
   */
  private feeds(session: Session, extra: Feeds, prefix = ''): Feeds {
    const feeds: Feeds = { ...extra };
    for (const name of session.inputNames) {
      if (name in feeds) continue;
      const p = this.paramSpec(prefix + name);
      feeds[name] = new ort.Tensor(this.dtype, this.state.get(p.name)!, p.shape);
    }
    return feeds;
  }

  private paramSpec(name: string): ParamSpec {
    const p = this.model.params.find((q) => q.name === name);
    if (!p) throw new Error(`segment input ${name} is not a parameter`);
    return p;
  }

  private aux(kind: 'loss' | 'norm'): Promise<Session> {
    let pending = this.auxSessions.get(kind);
    if (!pending) {
      const bytes =
        kind === 'loss'
          ? buildTrainingModel({ spec: this.spec, dtype: this.dtype, mode: 'loss' }).bytes
          : buildOptimizer(this.spec, this.dtype, this.model.adamw, 'norm').bytes;
      pending = createTrainingSession(bytes, { ...this.options, enableCpuMemArena: this.options.enableCpuMemArena ?? false });
      this.auxSessions.set(kind, pending);
    }
    return pending;
  }

  private async runSegment(session: Session, feeds: Feeds, batchSize: number, what: string): Promise<Record<string, ort.Tensor>> {
    try {
      return (await session.run(feeds)) as Record<string, ort.Tensor>;
    } catch (err) {
      const message = (err as Error).message ?? String(err);
      throw new TrainStepError(`training step failed at batch size ${batchSize} (segment ${what}): ${message}`, { cause: err });
    }
  }

  private zeros(n: number): FloatArray {
    return this.dtype === 'float64' ? new Float64Array(n) : new Float32Array(n);
  }

  private assertLive(): void {
    if (this.released) throw new TrainInputError('this SegmentedTrainStep was released');
  }

  private batchFeeds(batch: TrainBatch): Feeds {
    const { batchSize } = batch;
    const { seqLen: T, vocabSize: V } = this.spec;
    if (!Number.isInteger(batchSize) || batchSize < 1) throw new TrainInputError(`batchSize must be a positive integer (got ${batchSize})`);
    for (const [field, arr] of [
      ['inputIds', batch.inputIds],
      ['labels', batch.labels],
    ] as const) {
      if (!(arr instanceof BigInt64Array)) throw new TrainInputError(`batch.${field} must be a BigInt64Array`);
      if (arr.length !== batchSize * T) {
        throw new TrainInputError(`batch.${field} has ${arr.length} ids; batchSize × seqLen = ${batchSize} × ${T} = ${batchSize * T}`);
      }
      for (let i = 0; i < arr.length; i++) {
        const id = arr[i]!;
        if (id < 0n || id >= BigInt(V)) throw new TrainInputError(`batch.${field}[${i}] = ${id} is outside the vocabulary [0, ${V})`);
      }
    }
    return {
      [tensorNames.inputIds]: new ort.Tensor('int64', batch.inputIds, [batchSize, T]),
      [tensorNames.labels]: new ort.Tensor('int64', batch.labels, [batchSize, T]),
    };
  }
}

/** Checks `offload` with @soup/offload and returns how each step opens its store. */
function resolveStore(options: SegmentedTrainStepOptions): {
  open: () => ActivationStore;
  target: OffloadTarget;
  saveDir: string | null;
  warnings: string[];
} {
  if (options.openActivationStore !== undefined) {
    if (options.offload !== undefined) throw new TrainInputError('pass either offload or openActivationStore, not both');
    if (typeof options.openActivationStore !== 'function') throw new TrainInputError('openActivationStore must be a function returning an ActivationStore');
    const probe = options.openActivationStore();
    const info = { target: probe.target, saveDir: probe.saveDir };
    probe.close();
    return { open: options.openActivationStore, ...info, warnings: [] };
  }
  const offload = options.offload ?? { target: 'keep' as const };
  if (typeof offload !== 'object' || offload === null) throw new TrainInputError("offload must be an object {target: 'keep' | 'cpu' | 'disk', saveDir?}");
  const target = offload.target as unknown;
  if (typeof target !== 'string' || !TARGETS.includes(target)) {
    throw new TrainInputError(`offload.target must be 'keep', 'cpu' or 'disk' (got ${JSON.stringify(target)})`);
  }
  const cwd = offload.cwd ?? process.cwd();
  const report = checkOffloadConfig({
    target: target === 'keep' ? null : target,
    backend: 'onnxruntime',
    device: (options.executionProvider ?? 'cpu') === 'cuda' ? `cuda:${options.deviceId ?? 0}` : 'cpu',
    saveDir: offload.saveDir ?? null,
    cwd,
  });
  if (report.errors.length > 0) throw new TrainInputError(`offload: ${report.errors.join(' ')}`);
  const open = (): ActivationStore =>
    new ActivationStore({ target: target as OffloadTarget, saveDir: target === 'disk' ? offload.saveDir! : null, cwd });
  // Open once now, so a save dir that cannot be created fails here rather than in the first step.
  let first: ActivationStore;
  try {
    first = open();
  } catch (err) {
    throw new TrainInputError(`offload: ${(err as Error).message}`, { cause: err });
  }
  const saveDir = first.saveDir;
  first.close();
  return { open, target: target as OffloadTarget, saveDir, warnings: report.warnings };
}

function toOffload(t: ort.Tensor): OffloadTensor {
  return { dtype: t.type, dims: t.dims, data: t.data } as OffloadTensor;
}

function toOrt(t: OffloadTensor): ort.Tensor {
  return new ort.Tensor(t.dtype as 'float32', t.data as Float32Array, t.dims);
}

function checkTensor(label: string, arr: FloatArray | undefined, p: ParamSpec, dtype: FloatDType): void {
  if (arr === undefined) throw new TrainInputError(`${label} is missing`);
  const want = dtype === 'float64' ? Float64Array : Float32Array;
  if (!(arr instanceof want)) throw new TrainInputError(`${label} must be a ${want.name} (the step's dtype is ${dtype})`);
  if (arr.length !== shapeSize(p.shape)) {
    throw new TrainInputError(`${label} has ${arr.length} values; shape [${p.shape.join(', ')}] needs ${shapeSize(p.shape)}`);
  }
}
