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
import { OnnxDataType } from './_proto';
import {
  blockUnits,
  buildAdamWGroup,
  buildEmbedBackward,
  buildEmbedForward,
  buildGradNorm,
  buildHead,
  buildSwitchModel,
  buildUnitSegments,
  type SavedSlot,
  type SegmentModel,
  type UnitKind,
} from './_segments';
import { resolveAdamW, type ResolvedAdamW } from './adamw-options';
import { buildTrainingModel } from './build-training-model';
import { TrainInputError, TrainStepError } from './errors';
import { assertGptSpec, type GptSpec } from './gpt-spec';
import type { FloatArray } from './init-parameters';
import type { TrainBatch } from './make-synthetic-batch';
import { parameterSpecs, type ParamSpec } from './parameter-specs';
import { releaseBuffers } from './_release-buffers';
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
  zerosOf,
} from './_step-common';
import { resolveRecompute } from './resolve-recompute';
import { tensorNames } from './tensor-names';
import { createTrainingSession } from './_training-session';
import type { StepResult, TrainStepOptions, TrainStepState } from './step-types';

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
  /** Gradient norm, then clipping + AdamW (one run per block, one for the rest). */
  optimizerMs: number;
}

type Session = Awaited<ReturnType<typeof ort.InferenceSession.create>>;
type Feeds = Record<string, ort.Tensor>;

/** A runnable segment: its branch of the segments session (see `openSegments`). */
interface Segment {
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  run(feeds: Feeds): Promise<Record<string, ort.Tensor>>;
}

interface Unit {
  /** `h.<i>.attn` or `h.<i>.mlp`. */
  name: string;
  /** `h.<i>.`: put in front of the block-relative names of the unit's segments. */
  prefix: string;
  forward: Segment;
  backward: Segment;
  saved: SavedSlot[];
}

interface Sessions {
  embedForward: Segment;
  embedBackward: Segment;
  head: Segment;
  /** Forward order; units of one kind share their segments. */
  units: Unit[];
  gradNorm: Segment;
  adamwBlock: Segment;
  adamwRest: Segment;
}

const TARGETS: readonly string[] = ['keep', 'cpu', 'disk'];

/**
 * ORT's intra-op threads spin for a while after each run by default. A segmented step makes two
 * dozen runs with JavaScript work between them (output copies, scratch-file I/O), and the
 * spinning threads take the cores from it: measured on 2 shared cores, the disk-offloaded step
 * took 1.8× the fused step's time spinning and 1.2× not spinning.
 */
const SEGMENT_SESSION_EXTRA = { session: { intra_op: { allow_spinning: '0' } } } as const;

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
  private readonly sessions: Sessions;
  private readonly allSessions: Session[];
  private readonly state = new Map<string, FloatArray>();
  private readonly auxSessions = new Map<'loss', Promise<Session>>();
  private readonly openStore: () => ActivationStore;
  private completed = 0;
  private tierText = 'off';
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
      throw new TrainInputError("profileFilePrefix: ORT profiling is supported for execution: 'fused' only (a segmented step runs a dozen sessions)");
    }
    const store = resolveStore(options);
    const spec = { ...options.spec };
    const dtype = options.dtype ?? 'float32';
    if (dtype !== 'float32' && dtype !== 'float64') throw new TrainInputError(`dtype must be 'float32' or 'float64' (got ${String(dtype)})`);
    const tier = resolveRecompute({
      spec,
      ...(options.gradientCheckpointing !== undefined ? { gradientCheckpointing: options.gradientCheckpointing } : {}),
      ...(options.recompute !== undefined ? { recompute: options.recompute } : {}),
    });
    if (tier.budget !== null) {
      throw new TrainInputError(
        "gradientCheckpointing: tier 'budget' plans by measuring the fused step; with execution: 'segmented' use a fixed tier ('full', 'medium', 'selective') or recompute",
      );
    }
    const recompute = tier.recompute;
    const adamw = resolveAdamW(options.adamw);
    const params = parameterSpecs(spec);

    const created: Session[] = [];
    try {
      const models: SegmentModel[] = [];
      const add = (m: SegmentModel): number => models.push(m) - 1;
      const byKind = new Map<UnitKind, { forward: number; backward: number; saved: SavedSlot[] }>();
      const unitPlan: { name: string; prefix: string; forward: number; backward: number; saved: SavedSlot[] }[] = [];
      for (let i = 0; i < spec.nLayers; i++) {
        for (const kind of blockUnits(recompute, i)) {
          let shared = byKind.get(kind);
          if (!shared) {
            const seg = buildUnitSegments(spec, dtype, kind);
            shared = { forward: add(seg.forward), backward: add(seg.backward), saved: seg.saved };
            byKind.set(kind, shared);
          }
          unitPlan.push({ name: `h.${i}.${kind.split(':')[0]}`, prefix: `h.${i}.`, ...shared });
        }
      }
      const at = {
        embedForward: add(buildEmbedForward(spec, dtype)),
        embedBackward: add(buildEmbedBackward(spec, dtype)),
        head: add(buildHead(spec, dtype)),
        gradNorm: add(buildGradNorm(spec, dtype)),
        adamwBlock: add(buildAdamWGroup(spec, dtype, adamw, 'block')),
        adamwRest: add(buildAdamWGroup(spec, dtype, adamw, 'rest')),
      };
      const segs = await openSegments(models, dtype, options, created);
      const units: Unit[] = unitPlan.map((u) => ({ ...u, forward: segs[u.forward]!, backward: segs[u.backward]! }));
      const sessions: Sessions = {
        embedForward: segs[at.embedForward]!,
        embedBackward: segs[at.embedBackward]!,
        head: segs[at.head]!,
        units,
        gradNorm: segs[at.gradNorm]!,
        adamwBlock: segs[at.adamwBlock]!,
        adamwRest: segs[at.adamwRest]!,
      };
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
          'embed.fwd',
          ...unitNames.map((u) => `${u}.fwd`),
          'head',
          ...unitNames.map((u) => `${u}.bwd`).reverse(),
          'embed.bwd',
          'grad-norm',
          ...Array.from({ length: spec.nLayers }, (_, i) => `h.${i}.adamw`),
          'adamw',
        ],
      };
      const step = new SegmentedTrainStep(options, model, sessions, created, parameters, store);
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

  /** Runs one training step on `batch` (all segments, then clipping + AdamW) and updates parameters and moments. */
  async run(batch: TrainBatch, opts: { lr?: number } = {}): Promise<StepResult> {
    this.assertLive();
    const t0 = performance.now();
    const lr = opts.lr ?? this.lr;
    checkLr(lr);
    const feeds = batchFeeds(this.spec, batch);
    const nextStep = this.completed + 1;
    const t1 = performance.now();
    const { loss, grads, stats } = await this.forwardBackward(batch.batchSize, feeds);
    const tOpt = performance.now();
    const { gradNorm } = await this.optimize(grads, lr, nextStep, batch.batchSize);
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
      },
      this.options.measure,
    );
  }

  /** Mean next-token loss of `batch` (the fused forward-only graph, created on first use). */
  async evaluate(batch: TrainBatch): Promise<number> {
    this.assertLive();
    const session = await this.aux('loss');
    const feeds = addParameterFeeds(batchFeeds(this.spec, batch), this.model.params, this.state, this.dtype);
    const out = await this.runSegment(session, feeds, batch.batchSize, 'evaluate');
    return Number(out[tensorNames.loss]!.data[0]);
  }

  /** Loss, global gradient norm and every parameter's gradient, through the segments (no update). */
  async gradients(batch: TrainBatch): Promise<{ loss: number; gradNorm: number; grads: Map<string, FloatArray> }> {
    this.assertLive();
    const { loss, grads, stats } = await this.forwardBackward(batch.batchSize, batchFeeds(this.spec, batch));
    const norm = await this.gradNorm(grads, batch.batchSize);
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
  }

  /**
   * Embedding forward, unit forwards (saved tensors packed into a fresh store), head, unit
   * backwards (unpacked, last unit first), embedding backward. The store is closed whatever
   * happens, so no scratch file outlives the call. Each segment runs in a helper of its own, so
   * its outputs are unreachable as soon as what the step keeps (y, dx, gradients) is taken.
   */
  private async forwardBackward(
    batchSize: number,
    batchFeeds: Feeds,
  ): Promise<{ loss: number; grads: Map<string, FloatArray>; stats: Omit<SegmentedStepStats, 'optimizerMs'> }> {
    const { sessions, spec } = this;
    const store = this.openStore();
    const io = { packMs: 0, unpackMs: 0 };
    const grads = new Map<string, FloatArray>();
    try {
      const t0 = performance.now();
      const ids = batchFeeds[tensorNames.inputIds]!;
      let x: ort.Tensor | null = await this.embedForward(ids, batchSize);
      const handles: (Map<string, ActivationHandle> | null)[] = [];
      for (const u of sessions.units) {
        const r = await this.unitForward(u, x, store, batchSize, io);
        handles.push(r.saved);
        x = r.y;
      }
      const t1 = performance.now();
      const head = await this.headStep(x, batchFeeds[tensorNames.labels]!, grads, batchSize);
      releaseBuffers([x.data as ArrayBufferView]);
      x = null;
      let dy = head.dx;
      const t2 = performance.now();
      for (let k = sessions.units.length - 1; k >= 0; k--) {
        const saved = handles[k]!;
        handles[k] = null;
        dy = await this.unitBackward(sessions.units[k]!, dy, saved, store, grads, batchSize, io);
      }
      await this.embedBackward(ids, dy, grads, batchSize);
      const t3 = performance.now();
      const ordered = new Map<string, FloatArray>();
      for (const p of this.model.params) ordered.set(p.name, grads.get(p.name)!);
      return {
        loss: head.loss,
        grads: ordered,
        stats: { store: store.stats, forwardMs: t1 - t0, headMs: t2 - t1, backwardMs: t3 - t2, ...io },
      };
    } finally {
      store.close();
    }
  }

  private async embedForward(ids: ort.Tensor, batchSize: number): Promise<ort.Tensor> {
    const s = this.sessions.embedForward;
    return (await this.runSegment(s, this.feeds(s, { [tensorNames.inputIds]: ids }), batchSize, 'wte+wpe forward')).y!;
  }

  /** One unit's forward: its saved tensors go into the store, its output is returned. */
  private async unitForward(
    u: Unit,
    x: ort.Tensor,
    store: ActivationStore,
    batchSize: number,
    io: { packMs: number },
  ): Promise<{ y: ort.Tensor; saved: Map<string, ActivationHandle> }> {
    const out = await this.runSegment(u.forward, this.feeds(u.forward, { x }, u.prefix), batchSize, `${u.name} forward`);
    const tp = performance.now();
    const saved = new Map<string, ActivationHandle>();
    try {
      for (const slot of u.saved) saved.set(slot.key, store.pack(toOffload(slot.fromInput ? x : out[`saved.${slot.key}`]!)));
    } catch (err) {
      throw storeFailure(`${u.name} forward`, 'pack', err);
    }
    io.packMs += performance.now() - tp;
    {
      // What the store copied or wrote is dead here; x too unless a 'keep' store holds it.
      const keep = store.target === 'keep';
      const dead: ort.Tensor[] = [];
      for (const [name, t] of Object.entries(out)) if (name !== 'y' && !keep) dead.push(t);
      if (!(keep && u.saved.some((slot) => slot.fromInput))) dead.push(x);
      releaseBuffers(dead.map((t) => t.data as ArrayBufferView));
    }
    return { y: out.y!, saved };
  }

  /** LN_f + LM head + loss, forward and backward: the loss, d(loss)/dx and the head's gradients. */
  private async headStep(x: ort.Tensor, labels: ort.Tensor, grads: Map<string, FloatArray>, batchSize: number): Promise<{ loss: number; dx: ort.Tensor }> {
    const s = this.sessions.head;
    const out = await this.runSegment(s, this.feeds(s, { x, [tensorNames.labels]: labels }), batchSize, 'ln_f + lm_head');
    const headW = this.spec.tieEmbeddings ? 'wte.weight' : 'lm_head.weight';
    for (const p of ['ln_f.weight', 'ln_f.bias', headW]) grads.set(p, out[tensorNames.grad(p)]!.data as FloatArray);
    return { loss: Number(out[tensorNames.loss]!.data[0]), dx: out.dx! };
  }

  /** One unit's backward: unpacks its saved tensors, records its gradients, returns dx. */
  private async unitBackward(
    u: Unit,
    dy: ort.Tensor,
    saved: Map<string, ActivationHandle>,
    store: ActivationStore,
    grads: Map<string, FloatArray>,
    batchSize: number,
    io: { unpackMs: number },
  ): Promise<ort.Tensor> {
    const feeds: Feeds = { dy };
    const tu = performance.now();
    try {
      for (const slot of u.saved) feeds[`saved.${slot.key}`] = toOrt(store.unpack(saved.get(slot.key)!));
    } catch (err) {
      throw storeFailure(`${u.name} backward`, 'unpack', err);
    }
    io.unpackMs += performance.now() - tu;
    const out = await this.runSegment(u.backward, this.feeds(u.backward, feeds, u.prefix), batchSize, `${u.name} backward`);
    for (const name of u.backward.outputNames) {
      if (name.startsWith('grad.')) grads.set(`${u.prefix}${name.slice('grad.'.length)}`, out[name]!.data as FloatArray);
    }
    // The unpacked tensors (the store has forgotten them) and dy are dead.
    releaseBuffers(Object.values(feeds).filter((t) => t !== undefined).map((t) => t.data as ArrayBufferView));
    return out.dx!;
  }

  /** The embedding's gradients; with tied embeddings `wte.weight` gets the head's part added. */
  private async embedBackward(ids: ort.Tensor, dy: ort.Tensor, grads: Map<string, FloatArray>, batchSize: number): Promise<void> {
    const s = this.sessions.embedBackward;
    const out = await this.runSegment(s, this.feeds(s, { [tensorNames.inputIds]: ids, dy }), batchSize, 'wte+wpe backward');
    grads.set('wpe.weight', out[tensorNames.grad('wpe.weight')]!.data as FloatArray);
    const dwte = out[tensorNames.grad('wte.weight')]!.data as FloatArray;
    const headPart = this.spec.tieEmbeddings ? grads.get('wte.weight') : undefined;
    releaseBuffers([dy.data as ArrayBufferView]);
    if (!headPart) {
      grads.set('wte.weight', dwte);
      return;
    }
    // The fused graph's Sum of the two parts: one IEEE addition per element, the same values.
    const sum = zerosOf(this.dtype, dwte.length);
    for (let k = 0; k < sum.length; k++) sum[k] = headPart[k]! + dwte[k]!;
    grads.set('wte.weight', sum);
    releaseBuffers([headPart, dwte]);
  }

  /** The global gradient norm (one small session over every gradient). */
  private async gradNorm(grads: Map<string, FloatArray>, batchSize: number): Promise<ort.Tensor> {
    const feeds: Feeds = {};
    for (const p of this.model.params) feeds[tensorNames.grad(p.name)] = new ort.Tensor(this.dtype, grads.get(p.name)!, p.shape);
    return (await this.runSegment(this.sessions.gradNorm, feeds, batchSize, 'grad-norm'))[tensorNames.gradNorm]!;
  }

  /**
   * Gradient norm, then clipping + AdamW one block at a time and once for the other parameters,
   * so that only one group's new values (which the runtime returns as copies) are in flight.
   */
  private async optimize(grads: Map<string, FloatArray>, lr: number, step: number, batchSize: number): Promise<{ gradNorm: number }> {
    const norm = await this.gradNorm(grads, batchSize);
    const common: Feeds = { ...optimizerFeeds(this.dtype, lr, step), [tensorNames.gradNorm]: norm };
    const groups: [Segment, string][] = Array.from({ length: this.spec.nLayers }, (_, i) => [this.sessions.adamwBlock, `h.${i}.`]);
    groups.push([this.sessions.adamwRest, '']);
    for (const [session, prefix] of groups) {
      const feeds: Feeds = { ...common };
      for (const name of session.inputNames) {
        if (name in feeds) continue;
        const { key, param } = this.stateKey(name, prefix);
        const p = this.paramSpec(param);
        feeds[name] = new ort.Tensor(this.dtype, key === 'grad' ? grads.get(param)! : this.state.get(key)!, p.shape);
      }
      const out = await this.runSegment(session, feeds, batchSize, prefix ? `${prefix}adamw` : 'adamw');
      // Copied into the step's own arrays, and the runtime's copies freed at once. Swapping the
      // arrays instead saved ~40 ms a step (bench geometry, batch 32) but left the allocator's
      // heap more fragmented: a peak up to 20 MiB higher from run to run.
      for (const name of session.outputNames) {
        const { key } = this.stateKey(name.slice('updated.'.length), prefix);
        this.state.get(key)!.set(out[name]!.data as FloatArray);
      }
      releaseBuffers(Object.values(out).map((t) => t.data as ArrayBufferView));
    }
    return { gradNorm: Number(norm.data[0]) };
  }

  /** Maps an optimizer-session name (`adam_m.ln_1.weight`, `grad.ln_1.weight`, `ln_1.weight`) to its state key and parameter. */
  private stateKey(name: string, prefix: string): { key: string; param: string } {
    for (const kind of ['adam_m.', 'adam_v.'] as const) {
      if (name.startsWith(kind)) {
        const param = prefix + name.slice(kind.length);
        return { key: kind + param, param };
      }
    }
    if (name.startsWith('grad.')) return { key: 'grad', param: prefix + name.slice('grad.'.length) };
    return { key: prefix + name, param: prefix + name };
  }

  /**
   * `extra` plus every parameter `session` reads; block sessions name their parameters relative
   * to the block, so `prefix` (`h.<i>.`) is put back in front.
   */
  private feeds(session: Segment, extra: Feeds, prefix = ''): Feeds {
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

  private aux(kind: 'loss'): Promise<Session> {
    let pending = this.auxSessions.get(kind);
    if (!pending) {
      const bytes = buildTrainingModel({ spec: this.spec, dtype: this.dtype, mode: 'loss' }).bytes;
      pending = createTrainingSession(bytes, { ...this.options, enableCpuMemArena: this.options.enableCpuMemArena ?? false }, SEGMENT_SESSION_EXTRA);
      this.auxSessions.set(kind, pending);
    }
    return pending;
  }

  private async runSegment(segment: Segment, feeds: Feeds, batchSize: number, what: string): Promise<Record<string, ort.Tensor>> {
    try {
      return await segment.run(feeds);
    } catch (err) {
      const message = (err as Error).message ?? String(err);
      throw new TrainStepError(`training step failed at batch size ${batchSize} (segment ${what}): ${message}`, { cause: err });
    }
  }

  private assertLive(): void {
    if (this.released) throw new TrainInputError('this SegmentedTrainStep was released');
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

/**
 * One session for every segment model (`buildSwitchModel`): one memory arena, sized by the
 * largest segment, and one thread pool. One session per segment was measured too: each keeps its
 * own allocations (no arena: the C allocator's; with arenas: one per session), and the activation
 * peak came out at 277–288 MB instead of 159–167 (bench geometry, batch 32).
 */
async function openSegments(models: SegmentModel[], dtype: FloatDType, options: SegmentedTrainStepOptions, created: Session[]): Promise<Segment[]> {
  const sw = buildSwitchModel(dtype, models);
  const session = await createTrainingSession(sw.bytes, options, SEGMENT_SESSION_EXTRA);
  created.push(session);
  // Placeholders for the inputs of the segments not selected: never read (their If takes the
  // else-branch). Symbolic dimensions are 0; fixed shapes view one zero buffer nothing touches.
  const dimsOf = (shape: readonly (number | string)[]): number[] => shape.map((d) => (typeof d === 'number' ? d : 0));
  const elementBytes = (type: number): number => (type === OnnxDataType.INT64 || dtype === 'float64' ? 8 : 4);
  let maxBytes = 8;
  for (const i of sw.inputs) maxBytes = Math.max(maxBytes, dimsOf(i.shape ?? []).reduce((n, d) => n * d, elementBytes(i.dataType)));
  const zero = new ArrayBuffer(maxBytes);
  const placeholders: Feeds = {};
  for (const i of sw.inputs) {
    if (i.name === 'segment') continue;
    const dims = dimsOf(i.shape ?? []);
    const n = dims.reduce((a, d) => a * d, 1);
    placeholders[i.name] =
      i.dataType === OnnxDataType.INT64
        ? new ort.Tensor('int64', new BigInt64Array(zero, 0, n), dims)
        : dtype === 'float64'
          ? new ort.Tensor('float64', new Float64Array(zero, 0, n), dims)
          : new ort.Tensor('float32', new Float32Array(zero, 0, n), dims);
  }
  return sw.segments.map((seg, k) => {
    const selector = new ort.Tensor('int64', BigInt64Array.of(BigInt(k)), []);
    const fetches = [...seg.outputs.keys()];
    return {
      inputNames: seg.inputNames,
      outputNames: [...seg.outputs.values()],
      run: async (feeds: Feeds) => {
        const out = (await session.run({ ...placeholders, ...feeds, segment: selector }, fetches)) as Record<string, ort.Tensor>;
        const named: Record<string, ort.Tensor> = {};
        for (const [full, own] of seg.outputs) named[own] = out[full]!;
        return named;
      },
    };
  });
}

function storeFailure(segment: string, op: 'pack' | 'unpack', err: unknown): TrainStepError {
  const message = (err as Error).message ?? String(err);
  return new TrainStepError(`segment ${segment}: the activation store could not ${op} a saved tensor: ${message}`, { cause: err });
}

function toOffload(t: ort.Tensor): OffloadTensor {
  return { dtype: t.type, dims: t.dims, data: t.data } as OffloadTensor;
}

function toOrt(t: OffloadTensor): ort.Tensor {
  return new ort.Tensor(t.dtype as 'float32', t.data as Float32Array, t.dims);
}
