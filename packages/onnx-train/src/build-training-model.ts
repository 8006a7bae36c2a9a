import { Emitter, GraphCore, floatTypeCode, type FloatDType } from './_graph';
import { block } from './_block';
import { embeddings, layerNorm, lmHeadLoss } from './_layers';
import type { EmitEnv, LayerModule } from './_module';
import { OnnxDataType } from './_proto';
import { resolveAdamW, type AdamWOptions, type ResolvedAdamW } from './adamw-options';
import { GptSpecError } from './errors';
import { assertGptSpec, type GptSpec } from './gpt-spec';
import { parameterSpecs, type ParamSpec } from './parameter-specs';
import { tensorNames } from './tensor-names';

/** What the graph computes. */
export type TrainingModelMode =
  /** forward + backward + clipping + AdamW: outputs loss, grad_norm, updated parameters and moments. */
  | 'train'
  /** forward + backward: outputs loss, grad_norm and `grad.<param>` for every parameter (no optimizer). */
  | 'gradients'
  /** forward only: outputs loss (evaluation). */
  | 'loss';

export interface BuildTrainingModelOptions {
  spec: GptSpec;
  /** Float precision of parameters, activations and optimizer state. @default 'float32' */
  dtype?: FloatDType;
  /**
   * Modules whose forward is emitted again inside the backward, so their activations die
   * after the forward: blocks `h.<i>`, sub-blocks `h.<i>.attn` / `h.<i>.mlp`, or
   * `h.<i>.attn.core` (only the attention probabilities; q, k, v stay saved) (e.g. the
   * output of `@soup/grad-ckpt`'s `planCheckpoint(moduleNames(spec), tier)`). A block in the
   * set covers its sub-blocks. @default []
   */
  recompute?: readonly string[];
  /** @default 'train' */
  mode?: TrainingModelMode;
  /** Optimizer constants baked into the graph (ignored unless mode is 'train'). */
  adamw?: AdamWOptions;
}

/** A serialised ONNX training graph plus the facts needed to feed it. */
export interface TrainingModel {
  /** The ONNX ModelProto bytes (opset 18); `InferenceSession.create(bytes)` accepts them. */
  bytes: Uint8Array;
  spec: GptSpec;
  dtype: FloatDType;
  mode: TrainingModelMode;
  /** The recompute set actually applied (validated, sorted by position). */
  recompute: string[];
  adamw: ResolvedAdamW;
  params: ParamSpec[];
  inputNames: string[];
  outputNames: string[];
}

const RECOMPUTE_RE = /^h\.(\d+)(?:\.(attn|mlp|attn\.core))?$/;

/** Validates a recompute set against the spec; returns it normalised (blocks cover their sub-blocks). */
export function normalizeRecompute(spec: GptSpec, names: readonly string[]): string[] {
  const blocks = new Set<number>();
  const subs = new Map<number, Set<'attn' | 'mlp' | 'attn.core'>>();
  for (const name of names) {
    const m = RECOMPUTE_RE.exec(name);
    const index = m ? Number(m[1]) : NaN;
    if (!m || index >= spec.nLayers) {
      throw new GptSpecError(
        `recompute: unknown module ${JSON.stringify(name)}; allowed are h.<i>, h.<i>.attn, h.<i>.attn.core ` +
          `(attention core only) or h.<i>.mlp with 0 ≤ i < nLayers (${spec.nLayers}), see moduleNames(spec)`,
      );
    }
    if (m[2] === undefined) blocks.add(index);
    else {
      const set = subs.get(index) ?? new Set();
      set.add(m[2] as 'attn' | 'mlp' | 'attn.core');
      subs.set(index, set);
    }
  }
  const out: string[] = [];
  for (let i = 0; i < spec.nLayers; i++) {
    if (blocks.has(i)) out.push(`h.${i}`);
    else {
      const s = subs.get(i);
      // The whole attention module covers its core.
      if (s?.has('attn')) out.push(`h.${i}.attn`);
      else if (s?.has('attn.core')) out.push(`h.${i}.attn.core`);
      if (s?.has('mlp')) out.push(`h.${i}.mlp`);
    }
  }
  return out;
}

/** The model's modules in forward order with a recompute set applied. */
export function buildModules(spec: GptSpec, recompute: readonly string[]): LayerModule[] {
  const set = new Set(recompute);
  const modules: LayerModule[] = [embeddings(spec)];
  for (let i = 0; i < spec.nLayers; i++) {
    modules.push(
      block(i, spec, {
        recomputeAttn: set.has(`h.${i}.attn`),
        recomputeAttnCore: set.has(`h.${i}.attn.core`),
        recomputeMlp: set.has(`h.${i}.mlp`),
        recomputeBlock: set.has(`h.${i}`),
      }),
    );
  }
  modules.push(layerNorm('ln_f', spec), lmHeadLoss(spec));
  return modules;
}

/**
 * Builds the fused training step as one ONNX graph of standard operators (opset 18):
 * inputs `input_ids`, `labels` (`[batch, seqLen]` int64, batch dynamic), `lr`, `step`, every
 * parameter and its AdamW moments `adam_m.<p>` / `adam_v.<p>`; outputs `loss`, `grad_norm`
 * and `updated.<input>` for every parameter and moment. See `tensorNames`.
 */
export function buildTrainingModel(options: BuildTrainingModelOptions): TrainingModel {
  return emitTrainingGraph(options).model;
}

/** Where each module's values went in the fused graph (for structural tests and segment builders). */
export interface ModuleTrace {
  name: string;
  /** Forward input value (token ids for the embeddings). */
  input: string;
  y: string;
  saved: Record<string, string>;
  /** Upstream gradient fed to the backward (null for the loss head). */
  dy: string | null;
  dx: string | null;
}

/** `buildTrainingModel` plus the emitted graph and a per-module trace (internal). */
export function emitTrainingGraph(options: BuildTrainingModelOptions): {
  model: TrainingModel;
  core: GraphCore;
  trace: ModuleTrace[];
} {
  const trace: ModuleTrace[] = [];
  const { spec } = options;
  assertGptSpec(spec);
  const dtype = options.dtype ?? 'float32';
  if (dtype !== 'float32' && dtype !== 'float64')
    throw new GptSpecError(`dtype must be 'float32' or 'float64' (got ${String(dtype)})`);
  const mode = options.mode ?? 'train';
  if (!['train', 'gradients', 'loss'].includes(mode))
    throw new GptSpecError(`mode must be 'train', 'gradients' or 'loss' (got ${String(mode)})`);
  const adamw = resolveAdamW(options.adamw);
  const recompute = normalizeRecompute(spec, options.recompute ?? []);
  const params = parameterSpecs(spec);
  const ft = floatTypeCode(dtype);
  const core = new GraphCore(dtype);
  const root = new Emitter(core, '');

  const inputIds = core.addInput(tensorNames.inputIds, OnnxDataType.INT64, ['batch', spec.seqLen]);
  const labels = core.addInput(tensorNames.labels, OnnxDataType.INT64, ['batch', spec.seqLen]);
  const lr = mode === 'train' ? core.addInput(tensorNames.lr, ft, []) : '';
  const step = mode === 'train' ? core.addInput(tensorNames.step, OnnxDataType.INT64, []) : '';
  const paramValues = new Map<string, string>();
  for (const p of params) paramValues.set(p.name, core.addInput(p.name, ft, p.shape));
  if (mode === 'train') {
    for (const p of params) core.addInput(tensorNames.adamM(p.name), ft, p.shape);
    for (const p of params) core.addInput(tensorNames.adamV(p.name), ft, p.shape);
  }

  let mask: string | undefined;
  const env: EmitEnv = {
    spec,
    param(name) {
      const v = paramValues.get(name);
      if (v === undefined) throw new Error(`no parameter named ${name}`);
      return v;
    },
    input: () => labels,
    causalMask(e) {
      if (mask === undefined) {
        const T = spec.seqLen;
        const values = new Array<number>(T * T);
        for (let i = 0; i < T; i++) for (let j = 0; j < T; j++) values[i * T + j] = j > i ? -1e9 : 0;
        mask = e.floats(values, [T, T]);
      }
      return mask;
    },
  };

  const modules = buildModules(spec, recompute);
  const saved: Record<string, string>[] = [];
  let x = inputIds;
  for (const m of modules) {
    const r = m.forward(root.scope(`${m.name}/fwd`), env, x);
    trace.push({ name: m.name, input: x, y: r.y, saved: r.saved, dy: null, dx: null });
    saved.push(r.saved);
    x = r.y;
  }
  const loss = x;
  root.op1('Identity', [loss], {}, tensorNames.loss);
  core.addOutput(tensorNames.loss, ft, []);
  const outputNames: string[] = [tensorNames.loss];

  if (mode !== 'loss') {
    const gradParts = new Map<string, string[]>();
    let dy: string | null = null;
    for (let i = modules.length - 1; i >= 0; i--) {
      const m = modules[i]!;
      const r = m.backward(root.scope(`${m.name}/bwd`), env, saved[i]!, dy);
      for (const [p, g] of r.grads) gradParts.set(p, [...(gradParts.get(p) ?? []), g]);
      trace[i]!.dy = dy;
      trace[i]!.dx = r.dx;
      dy = r.dx;
    }
    const opt = root.scope('optimizer');
    const grads = new Map<string, string>();
    for (const p of params) {
      const parts = gradParts.get(p.name);
      if (!parts || parts.length === 0) throw new Error(`no gradient for ${p.name}`);
      grads.set(p.name, parts.length === 1 ? parts[0]! : opt.op1('Sum', parts));
    }
    const squares = new Map<string, string>();
    const sumSquares = params.map((p) => {
      const g = grads.get(p.name)!;
      const sq = opt.mul(g, g);
      squares.set(p.name, sq);
      return opt.reduceSum(sq, [], false);
    });
    const gradNorm = opt.op1(
      'Sqrt',
      [sumSquares.length === 1 ? sumSquares[0]! : opt.op1('Sum', sumSquares)],
      {},
      tensorNames.gradNorm,
    );
    core.addOutput(tensorNames.gradNorm, ft, []);
    outputNames.push(tensorNames.gradNorm);

    if (mode === 'gradients') {
      for (const p of params) {
        const name = tensorNames.grad(p.name);
        opt.op1('Identity', [grads.get(p.name)!], {}, name);
        core.addOutput(name, ft, p.shape);
        outputNames.push(name);
      }
    } else {
      outputNames.push(...emitAdamW(opt, { params, grads, squares, paramValues, gradNorm, lr, step, adamw }));
    }
  }

  const bytes = core.encode({
    graphName: `soup_gpt_${mode}`,
    producerVersion: 'graph-v1',
    docString:
      `@soup/onnx-train ${mode} step: ${JSON.stringify(spec)} dtype=${dtype} recompute=[` + `${recompute.join(',')}]`,
  });
  const model: TrainingModel = {
    bytes,
    spec: { ...spec },
    dtype,
    mode,
    recompute,
    adamw,
    params,
    inputNames: core.inputs.map((i) => i.name),
    outputNames,
  };
  return { model, core, trace };
}

/** Clipping + AdamW over `grads` (internal; also the segmented step's optimizer model). */
export function emitAdamW(
  e: Emitter,
  a: {
    params: ParamSpec[];
    grads: Map<string, string>;
    /** g ⊙ g per parameter (already computed for the norm). */
    squares: Map<string, string>;
    paramValues: Map<string, string>;
    gradNorm: string;
    lr: string;
    step: string;
    adamw: ResolvedAdamW;
  },
): string[] {
  const { beta1, beta2, eps, weightDecay, maxGradNorm } = a.adamw;
  const ft = e.core.floatType;
  const one = e.scalar(1);
  const clip = maxGradNorm > 0 && Number.isFinite(maxGradNorm);
  // torch: clip_coef = max_norm / (total_norm + 1e-6), clamped to at most 1; folded into the
  // moment updates' scalars: m' = β1·m + ((1−β1)·coef)·g, v' = β2·v + ((1−β2)·coef²)·g².
  const coef = clip ? e.op1('Min', [e.div(e.scalar(maxGradNorm), e.add(a.gradNorm, e.scalar(1e-6))), one]) : undefined;
  const gScale = coef ? e.mul(coef, e.scalar(1 - beta1)) : e.scalar(1 - beta1);
  const g2Scale = coef ? e.mul(e.mul(coef, coef), e.scalar(1 - beta2)) : e.scalar(1 - beta2);
  const t = e.op1('Max', [e.castFloat(a.step), one]);
  const bc1 = e.sub(one, e.op1('Pow', [e.scalar(beta1), t]));
  const bc2 = e.sub(one, e.op1('Pow', [e.scalar(beta2), t]));
  const stepSize = e.div(a.lr, bc1);
  const sqrtBc2 = e.unary('Sqrt', bc2);
  const decay = weightDecay !== 0 ? e.sub(one, e.mul(a.lr, e.scalar(weightDecay))) : undefined;
  const outputs: string[] = [];
  for (const p of a.params) {
    const pe = e.scope(p.name);
    const mName = tensorNames.adamM(p.name);
    const vName = tensorNames.adamV(p.name);
    const m2 = pe.add(
      pe.mul(mName, pe.scalar(beta1)),
      pe.mul(a.grads.get(p.name)!, gScale),
      tensorNames.updated(mName),
    );
    const v2 = pe.add(
      pe.mul(vName, pe.scalar(beta2)),
      pe.mul(a.squares.get(p.name)!, g2Scale),
      tensorNames.updated(vName),
    );
    const denom = pe.add(pe.div(pe.unary('Sqrt', v2), sqrtBc2), pe.scalar(eps));
    const base = p.weightDecay && decay ? pe.mul(a.paramValues.get(p.name)!, decay) : a.paramValues.get(p.name)!;
    pe.sub(base, pe.mul(pe.div(m2, denom), stepSize), tensorNames.updated(p.name));
    for (const n of [p.name, mName, vName]) {
      e.core.addOutput(tensorNames.updated(n), ft, p.shape);
      outputs.push(tensorNames.updated(n));
    }
  }
  return outputs;
}
