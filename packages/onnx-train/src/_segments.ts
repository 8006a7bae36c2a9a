// The segmented step's graphs: the same layer modules as the fused graph, cut at module
// boundaries into one small ONNX model per segment.
//
//   embed.fwd      input_ids → x0                           (saves the ids: the step holds them)
//   block.fwd      x_i → x_{i+1}, saved.<key> …              one model per recompute variant,
//   block.bwd      dy, saved.<key> …, params → dx, grad.*    shared by every block of that variant
//   head           x_L, labels → loss, dx, grad.* of ln_f and the LM head (forward + backward in
//                  one model: nothing is saved across it, as its backward follows at once)
//   embed.bwd      input_ids, dy → grad.wte.weight (embedding part), grad.wpe.weight
//   optimizer      grads, params, moments, lr, step → grad_norm, updated.*   (the fused graph's
//                  clipping + AdamW, emitted by the same code)
//
// Block models name their parameters relative to the block (`ln_1.weight`, `attn.c_attn.weight`),
// so the four blocks of a 4-layer model run through one forward and one backward session.
import { Emitter, GraphCore, floatTypeCode, type FloatDType } from './_graph';
import { block, embeddings, layerNorm, lmHeadLoss } from './_layers';
import { withRecompute, type EmitEnv, type LayerModule, type SavedDim } from './_module';
import { OnnxDataType, type OnnxDataTypeCode } from './_proto';
import type { ResolvedAdamW } from './adamw-options';
import { emitAdamW } from './build-training-model';
import type { GptSpec } from './gpt-spec';
import { parameterSpecs, type ParamSpec } from './parameter-specs';
import { tensorNames } from './tensor-names';

/** One segment's ONNX model. */
export interface SegmentModel {
  bytes: Uint8Array;
  inputNames: string[];
  outputNames: string[];
}

/** How a block is recomputed: the whole block, its attention, its MLP, or nothing. */
export interface BlockVariant {
  full: boolean;
  attn: boolean;
  mlp: boolean;
}

export interface SavedSlot {
  key: string;
  type: 'float' | 'int64';
  shape: readonly SavedDim[];
  /** The saved tensor is the segment's input itself (a recomputed block keeps only its input). */
  fromInput: boolean;
}

export interface BlockSegments {
  /** `none`, `attn`, `mlp`, `attn+mlp` or `full`. */
  variant: string;
  forward: SegmentModel;
  backward: SegmentModel;
  /** What the forward hands to the backward, in `saves` order. */
  saved: SavedSlot[];
}

const BLOCK_PREFIX = 'h.0.';

export function variantKey(v: BlockVariant): string {
  if (v.full) return 'full';
  if (v.attn && v.mlp) return 'attn+mlp';
  return v.attn ? 'attn' : v.mlp ? 'mlp' : 'none';
}

/** The recompute variant of block `index` under a normalised recompute list. */
export function blockVariant(recompute: readonly string[], index: number): BlockVariant {
  const set = new Set(recompute);
  return { full: set.has(`h.${index}`), attn: set.has(`h.${index}.attn`), mlp: set.has(`h.${index}.mlp`) };
}

/** Block-relative parameter name (`h.3.ln_1.weight` → `ln_1.weight`). */
export function blockRelative(name: string): string {
  const m = /^h\.\d+\.(.+)$/.exec(name);
  if (!m) throw new Error(`not a block parameter: ${name}`);
  return m[1]!;
}

class SegmentBuilder {
  readonly core: GraphCore;
  readonly root: Emitter;
  readonly ft: OnnxDataTypeCode;
  private readonly paramInputs = new Map<string, string>();
  private mask: string | undefined;
  private labels: string | undefined;
  readonly env: EmitEnv;

  constructor(
    readonly spec: GptSpec,
    dtype: FloatDType,
    /** Parameter name → graph input name; null: the name itself. */
    rename: ((name: string) => string) | null,
  ) {
    this.core = new GraphCore(dtype);
    this.root = new Emitter(this.core, '');
    this.ft = floatTypeCode(dtype);
    const shapes = new Map<string, ParamSpec>(parameterSpecs(spec).map((p) => [p.name, p]));
    this.env = {
      spec,
      param: (name) => {
        const hit = this.paramInputs.get(name);
        if (hit !== undefined) return hit;
        const p = shapes.get(name);
        if (!p) throw new Error(`no parameter named ${name}`);
        const input = this.core.addInput(rename ? rename(name) : name, this.ft, p.shape);
        this.paramInputs.set(name, input);
        return input;
      },
      input: () => {
        if (this.labels === undefined) throw new Error('this segment has no labels input');
        return this.labels;
      },
      causalMask: (e) => {
        if (this.mask === undefined) {
          const T = spec.seqLen;
          const values = new Array<number>(T * T);
          for (let i = 0; i < T; i++) for (let j = 0; j < T; j++) values[i * T + j] = j > i ? -1e9 : 0;
          this.mask = e.floats(values, [T, T]);
        }
        return this.mask;
      },
    };
  }

  withLabels(): this {
    this.labels = this.core.addInput(tensorNames.labels, OnnxDataType.INT64, ['batch', this.spec.seqLen]);
    return this;
  }

  output(value: string, name: string, type: OnnxDataTypeCode, shape?: readonly SavedDim[]): void {
    this.root.op1('Identity', [value], {}, name);
    this.core.addOutput(name, type, shape);
  }

  finish(name: string): SegmentModel {
    const bytes = this.core.encode({ graphName: `soup_gpt_segment_${name}`, producerVersion: 'graph-v1', docString: `@soup/onnx-train segment ${name}` });
    return { bytes, inputNames: this.core.inputs.map((i) => i.name), outputNames: this.core.outputs.map((o) => o.name) };
  }
}

function blockModule(spec: GptSpec, v: BlockVariant): LayerModule {
  const b = block(0, spec, { recomputeAttn: v.attn && !v.full, recomputeMlp: v.mlp && !v.full });
  return v.full ? withRecompute(b, spec) : b;
}

/** Forward and backward models of a block under a recompute variant. */
export function buildBlockSegments(spec: GptSpec, dtype: FloatDType, v: BlockVariant): BlockSegments {
  const m = blockModule(spec, v);
  const D = spec.dModel;
  const rename = (name: string): string => {
    if (!name.startsWith(BLOCK_PREFIX)) throw new Error(`block segment reads a parameter outside its block: ${name}`);
    return name.slice(BLOCK_PREFIX.length);
  };
  const key = variantKey(v);

  const f = new SegmentBuilder(spec, dtype, rename);
  const x = f.core.addInput('x', f.ft, ['tokens', D]);
  const r = m.forward(f.root.scope(`${m.name}/fwd`), f.env, x);
  f.output(r.y, 'y', f.ft, ['tokens', D]);
  const saved: SavedSlot[] = [];
  for (const s of m.saves) {
    const value = r.saved[s.key];
    if (value === undefined) throw new Error(`${m.name}: saved tensor ${s.key} missing`);
    const fromInput = value === x;
    if (!fromInput) f.output(value, `saved.${s.key}`, s.type === 'int64' ? OnnxDataType.INT64 : f.ft, s.shape);
    saved.push({ key: s.key, type: s.type, shape: s.shape, fromInput });
  }
  const forward = f.finish(`block_${key}_fwd`);

  const b = new SegmentBuilder(spec, dtype, rename);
  const dy = b.core.addInput('dy', b.ft, ['tokens', D]);
  const savedIn: Record<string, string> = {};
  for (const s of m.saves) {
    savedIn[s.key] = b.core.addInput(`saved.${s.key}`, s.type === 'int64' ? OnnxDataType.INT64 : b.ft, s.shape);
  }
  const g = m.backward(b.root.scope(`${m.name}/bwd`), b.env, savedIn, dy);
  b.output(g.dx!, 'dx', b.ft, ['tokens', D]);
  for (const [p, value] of g.grads) b.output(value, tensorNames.grad(rename(p)), b.ft);
  const backward = b.finish(`block_${key}_bwd`);
  return { variant: key, forward, backward, saved };
}

/** `input_ids` → `y` (`[tokens, dModel]`). */
export function buildEmbedForward(spec: GptSpec, dtype: FloatDType): SegmentModel {
  const s = new SegmentBuilder(spec, dtype, null);
  const ids = s.core.addInput(tensorNames.inputIds, OnnxDataType.INT64, ['batch', spec.seqLen]);
  const m = embeddings(spec);
  const r = m.forward(s.root.scope(`${m.name}/fwd`), s.env, ids);
  s.output(r.y, 'y', s.ft, ['tokens', spec.dModel]);
  return s.finish('embed_fwd');
}

/** `input_ids`, `dy` → `grad.wte.weight` (the embedding's part), `grad.wpe.weight`. */
export function buildEmbedBackward(spec: GptSpec, dtype: FloatDType): SegmentModel {
  const s = new SegmentBuilder(spec, dtype, null);
  const ids = s.core.addInput(tensorNames.inputIds, OnnxDataType.INT64, ['batch', spec.seqLen]);
  const dy = s.core.addInput('dy', s.ft, ['tokens', spec.dModel]);
  const m = embeddings(spec);
  const g = m.backward(s.root.scope(`${m.name}/bwd`), s.env, { ids }, dy);
  for (const [p, value] of g.grads) s.output(value, tensorNames.grad(p), s.ft);
  return s.finish('embed_bwd');
}

/** `x`, `labels` → `loss`, `dx` and the gradients of `ln_f` and the LM head weight. */
export function buildHead(spec: GptSpec, dtype: FloatDType): SegmentModel {
  const s = new SegmentBuilder(spec, dtype, null).withLabels();
  const x = s.core.addInput('x', s.ft, ['tokens', spec.dModel]);
  const lnf = layerNorm('ln_f', spec);
  const head = lmHeadLoss(spec);
  const r1 = lnf.forward(s.root.scope(`${lnf.name}/fwd`), s.env, x);
  const r2 = head.forward(s.root.scope(`${head.name}/fwd`), s.env, r1.y);
  s.output(r2.y, tensorNames.loss, s.ft, []);
  const g2 = head.backward(s.root.scope(`${head.name}/bwd`), s.env, r2.saved, null);
  const g1 = lnf.backward(s.root.scope(`${lnf.name}/bwd`), s.env, r1.saved, g2.dx);
  s.output(g1.dx!, 'dx', s.ft, ['tokens', spec.dModel]);
  for (const [p, value] of [...g2.grads, ...g1.grads]) s.output(value, tensorNames.grad(p), s.ft);
  return s.finish('head');
}

/**
 * The fused graph's optimizer region with the gradients as inputs `grad.<param>`:
 * `'adamw'` → `grad_norm` and `updated.<param|moment>` (clipping + AdamW, same emitter);
 * `'norm'` → `grad_norm` only.
 */
export function buildOptimizer(spec: GptSpec, dtype: FloatDType, adamw: ResolvedAdamW, mode: 'adamw' | 'norm'): SegmentModel {
  const params = parameterSpecs(spec);
  const s = new SegmentBuilder(spec, dtype, null);
  const { core } = s;
  const lr = mode === 'adamw' ? core.addInput(tensorNames.lr, s.ft, []) : '';
  const step = mode === 'adamw' ? core.addInput(tensorNames.step, OnnxDataType.INT64, []) : '';
  const paramValues = new Map<string, string>();
  if (mode === 'adamw') {
    for (const p of params) paramValues.set(p.name, core.addInput(p.name, s.ft, p.shape));
    for (const p of params) core.addInput(tensorNames.adamM(p.name), s.ft, p.shape);
    for (const p of params) core.addInput(tensorNames.adamV(p.name), s.ft, p.shape);
  }
  const grads = new Map<string, string>();
  for (const p of params) grads.set(p.name, core.addInput(tensorNames.grad(p.name), s.ft, p.shape));
  // As in emitTrainingGraph: g², ReduceSum per tensor, Sum, Sqrt.
  const opt = s.root.scope('optimizer');
  const squares = new Map<string, string>();
  const sumSquares = params.map((p) => {
    const g = grads.get(p.name)!;
    const sq = opt.mul(g, g);
    squares.set(p.name, sq);
    return opt.reduceSum(sq, [], false);
  });
  const gradNorm = opt.op1('Sqrt', [sumSquares.length === 1 ? sumSquares[0]! : opt.op1('Sum', sumSquares)], {}, tensorNames.gradNorm);
  core.addOutput(tensorNames.gradNorm, s.ft, []);
  if (mode === 'adamw') emitAdamW(opt, { params, grads, squares, paramValues, gradNorm, lr, step, adamw });
  return s.finish(`optimizer_${mode}`);
}
