// The segmented step's graphs: the fused graph's layer modules, cut at module boundaries into
// small ONNX models, one per segment. In execution order:
//
//   embed.fwd       input_ids → x0 (the embedding saves only the ids, which the step holds)
//   h.<i>.attn.fwd  x → x + attn(ln_1(x)), saved.<key> …       ┐ a block as two halves, each a
//   h.<i>.mlp.fwd   x → x + mlp(ln_2(x)),  saved.<key> …       ┘ forward/backward pair
//   head            x_L, labels → loss, dx, grads of ln_f and the LM head (forward and backward in
//                   one model: nothing would be saved across it, its backward follows at once)
//   h.<i>.mlp.bwd   dy, saved.<key> …, params → dx, grad.*      (last block first)
//   h.<i>.attn.bwd
//   embed.bwd       input_ids, dy → grad.wte.weight (embedding part), grad.wpe.weight
//   grad-norm       grad.* → grad_norm (the fused graph's g², ReduceSum, Sum, Sqrt)
//   adamw           per block, then the rest: clipping by grad_norm + AdamW (the fused graph's emitter)
//
// Recompute follows the fused graph: a half under sub-block recompute (`h.<i>.attn`,
// `h.<i>.mlp`) saves the LayerNorm's tensors and the sub-block's input; under attention-core
// recompute (`h.<i>.attn.core`) the attention half saves a, q, k, v and o but not the
// probabilities, which its backward recomputes from q and k (the fused graph's emitter); under block recompute
// (`h.<i>`) each half saves only its input (the block input, the mid-block residual) and re-runs
// its whole forward inside its backward segment. Half-block cuts halve what one segment holds:
// the runtime returns a segment's outputs as copies, so its saved tensors briefly exist twice.
//
// Block models name their parameters relative to the block (`ln_1.weight`), so every block of
// a model runs through the same few models. `buildSwitchModel` (_switch-model.ts) then puts them all into one,
// each behind an `If`, so one ONNX Runtime session (one memory arena, one thread pool) runs them.
import { Emitter, GraphCore, floatTypeCode, type FloatDType } from './_graph';
import { attention, embeddings, layerNorm, lmHeadLoss, mlp } from './_layers';
import { withRecompute, type EmitEnv, type LayerModule, type SavedDim } from './_module';
import { OnnxDataType, type GraphDef, type OnnxDataTypeCode } from './_proto';
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
  /** The pruned graph itself (what `bytes` encodes), for {@link buildSwitchModel}. */
  graph: GraphDef;
}

/**
 * A forward/backward pair: half a block, `attn` (`ln_1` + attention + residual) or `mlp`
 * (`ln_2` + MLP + residual); `:sub` recomputes the sub-block, `:half` the whole half, `:core`
 * only the attention probabilities (scores + softmax from the saved q and k).
 */
export type UnitKind = 'attn' | 'attn:sub' | 'attn:core' | 'attn:half' | 'mlp' | 'mlp:sub' | 'mlp:half';

export interface SavedSlot {
  key: string;
  type: 'float' | 'int64';
  shape: readonly SavedDim[];
  /** The saved tensor is the segment's input itself (a recomputed unit keeps only its input). */
  fromInput: boolean;
}

export interface UnitSegments {
  kind: UnitKind;
  forward: SegmentModel;
  backward: SegmentModel;
  /** What the forward hands to the backward, in `saves` order. */
  saved: SavedSlot[];
}

const BLOCK_PREFIX = 'h.0.';

/** The units of block `index` in forward order, under a normalised recompute list. */
export function blockUnits(recompute: readonly string[], index: number): [UnitKind, UnitKind] {
  const set = new Set(recompute);
  if (set.has(`h.${index}`)) return ['attn:half', 'mlp:half'];
  const attn: UnitKind = set.has(`h.${index}.attn`)
    ? 'attn:sub'
    : set.has(`h.${index}.attn.core`)
      ? 'attn:core'
      : 'attn';
  return [attn, set.has(`h.${index}.mlp`) ? 'mlp:sub' : 'mlp'];
}

/** Half a block: `x + sub(ln(x))`, with the block's own op order (so values equal the fused graph's). */
function halfBlock(spec: GptSpec, part: 'attn' | 'mlp', recompute: 'sub' | 'core' | null): LayerModule {
  const name = `h.0.${part}`;
  const ln = layerNorm(part === 'attn' ? 'h.0.ln_1' : 'h.0.ln_2', spec);
  const plain = part === 'attn' ? attention(name, spec, { recomputeCore: recompute === 'core' }) : mlp(name, spec);
  const sub = recompute === 'sub' ? withRecompute(plain, spec) : plain;
  const lnKey = part === 'attn' ? 'ln_1' : 'ln_2';
  return {
    name: `h.0.${part}-half`,
    shapePreserving: true,
    saves: [
      ...ln.saves.map((s) => ({ ...s, key: `${lnKey}.${s.key}` })),
      ...sub.saves.map((s) => ({ ...s, key: `${part}.${s.key}` })),
    ],
    forward(e, env, x) {
      const r1 = ln.forward(e.scope(lnKey), env, x);
      const r2 = sub.forward(e.scope(part), env, r1.y);
      const y = e.add(x, r2.y);
      const saved: Record<string, string> = {};
      for (const [k, v] of Object.entries(r1.saved)) saved[`${lnKey}.${k}`] = v;
      for (const [k, v] of Object.entries(r2.saved)) saved[`${part}.${k}`] = v;
      return { y, saved };
    },
    backward(e, env, saved, dy) {
      if (dy === null) throw new Error('a half block needs dy');
      const pick = (prefix: string): Record<string, string> => {
        const out: Record<string, string> = {};
        for (const [k, v] of Object.entries(saved)) if (k.startsWith(`${prefix}.`)) out[k.slice(prefix.length + 1)] = v;
        return out;
      };
      const g2 = sub.backward(e.scope(part), env, pick(part), dy);
      const g1 = ln.backward(e.scope(lnKey), env, pick(lnKey), g2.dx);
      return { dx: e.add(dy, g1.dx!), grads: new Map([...g2.grads, ...g1.grads]) };
    },
  };
}

class SegmentBuilder {
  readonly core: GraphCore;
  readonly root: Emitter;
  readonly ft: OnnxDataTypeCode;
  private readonly paramInputs = new Map<string, string>();
  private mask: string | undefined;
  private labels: string | undefined;
  private readonly pendingOutputs: { value: string; name: string }[] = [];
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

  /** Shape of parameter `name` (full name, e.g. `h.0.ln_1.weight`). */
  paramShape(name: string): readonly number[] {
    const p = parameterSpecs(this.spec).find((q) => q.name === name);
    if (!p) throw new Error(`no parameter named ${name}`);
    return p.shape;
  }

  /** Declares `value` as the graph output `name` (see `finish`). */
  output(value: string, name: string, type: OnnxDataTypeCode, shape: readonly SavedDim[]): void {
    this.core.reserve(name);
    this.pendingOutputs.push({ value, name });
    this.core.addOutput(name, type, shape);
  }

  /**
   * Names the outputs: the node producing a value is made to write the output name directly
   * (an `Identity` would copy every saved tensor once more, inside a subgraph too); a value that
   * is a graph input, an initializer or already an output goes through an `Identity`.
   */
  private nameOutputs(): void {
    const producer = new Map<string, number>();
    this.core.nodes.forEach((n, i) => {
      for (const o of n.outputs) producer.set(o, i);
    });
    const renamed = new Map<string, string>();
    for (const { value, name } of this.pendingOutputs) {
      if (producer.has(value) && !renamed.has(value)) renamed.set(value, name);
      else this.root.op1('Identity', [renamed.get(value) ?? value], {}, name);
    }
    const map = (v: string): string => renamed.get(v) ?? v;
    for (let i = 0; i < this.core.nodes.length; i++) {
      const n = this.core.nodes[i]!;
      this.core.nodes[i] = { ...n, inputs: n.inputs.map(map), outputs: n.outputs.map(map) };
    }
  }

  finish(name: string): SegmentModel {
    this.nameOutputs();
    const graphName = `soup_gpt_segment_${name}`;
    const bytes = this.core.encode({
      graphName,
      producerVersion: 'graph-v1',
      docString: `@soup/onnx-train segment ${name}`,
    });
    const { nodes, initializers, inputs, outputs } = this.core; // pruned by encode
    return {
      bytes,
      inputNames: inputs.map((i) => i.name),
      outputNames: outputs.map((o) => o.name),
      graph: {
        name: graphName,
        nodes: [...nodes],
        initializers: [...initializers],
        inputs: [...inputs],
        outputs: [...outputs],
      },
    };
  }
}

function unitModule(spec: GptSpec, kind: UnitKind): LayerModule {
  const [part, how] = kind.split(':') as ['attn' | 'mlp', 'sub' | 'core' | 'half' | undefined];
  const half = halfBlock(spec, part, how === 'sub' || how === 'core' ? how : null);
  return how === 'half' ? withRecompute(half, spec) : half;
}

function toBlockRelative(name: string): string {
  if (!name.startsWith(BLOCK_PREFIX)) throw new Error(`block segment reads a parameter outside its block: ${name}`);
  return name.slice(BLOCK_PREFIX.length);
}

/** Forward and backward models of one unit (parameters named relative to the block). */
export function buildUnitSegments(spec: GptSpec, dtype: FloatDType, kind: UnitKind): UnitSegments {
  const m = unitModule(spec, kind);
  const D = spec.dModel;
  const tag = kind.replace(':', '_');

  const f = new SegmentBuilder(spec, dtype, toBlockRelative);
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
  const forward = f.finish(`${tag}_fwd`);

  const b = new SegmentBuilder(spec, dtype, toBlockRelative);
  const dy = b.core.addInput('dy', b.ft, ['tokens', D]);
  const savedIn: Record<string, string> = {};
  for (const s of m.saves)
    savedIn[s.key] = b.core.addInput(`saved.${s.key}`, s.type === 'int64' ? OnnxDataType.INT64 : b.ft, s.shape);
  const g = m.backward(b.root.scope(`${m.name}/bwd`), b.env, savedIn, dy);
  b.output(g.dx!, 'dx', b.ft, ['tokens', D]);
  for (const [p, value] of g.grads) b.output(value, tensorNames.grad(toBlockRelative(p)), b.ft, b.paramShape(p));
  const backward = b.finish(`${tag}_bwd`);
  return { kind, forward, backward, saved };
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
  for (const [p, value] of g.grads) s.output(value, tensorNames.grad(p), s.ft, s.paramShape(p));
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
  for (const [p, value] of [...g2.grads, ...g1.grads]) s.output(value, tensorNames.grad(p), s.ft, s.paramShape(p));
  return s.finish('head');
}

/** `grad.<param>` for every parameter → `grad_norm`: the fused graph's g², ReduceSum, Sum, Sqrt. */
export function buildGradNorm(spec: GptSpec, dtype: FloatDType): SegmentModel {
  const s = new SegmentBuilder(spec, dtype, null);
  const opt = s.root.scope('optimizer');
  const sumSquares = parameterSpecs(spec).map((p) => {
    const g = s.core.addInput(tensorNames.grad(p.name), s.ft, p.shape);
    return opt.reduceSum(opt.mul(g, g), [], false);
  });
  opt.op1('Sqrt', [sumSquares.length === 1 ? sumSquares[0]! : opt.op1('Sum', sumSquares)], {}, tensorNames.gradNorm);
  s.core.addOutput(tensorNames.gradNorm, s.ft, []);
  return s.finish('grad_norm');
}

/** Parameters of an optimizer group: a block's (named relative to the block) or the others. */
export function groupParams(spec: GptSpec, group: 'block' | 'rest'): ParamSpec[] {
  const all = parameterSpecs(spec);
  if (group === 'rest') return all.filter((p) => !/^h\.\d+\./.test(p.name));
  return all.filter((p) => p.name.startsWith(BLOCK_PREFIX)).map((p) => ({ ...p, name: toBlockRelative(p.name) }));
}

/**
 * Clipping + AdamW for one group of parameters, `grad_norm` (the global norm) an input: the
 * fused graph's optimizer emitter, so every update equals the fused step's. Inputs `lr`, `step`,
 * `grad_norm`, the group's parameters, `adam_m.*`, `adam_v.*`, `grad.*`; outputs `updated.*`.
 */
export function buildAdamWGroup(
  spec: GptSpec,
  dtype: FloatDType,
  adamw: ResolvedAdamW,
  group: 'block' | 'rest',
): SegmentModel {
  const params = groupParams(spec, group);
  const s = new SegmentBuilder(spec, dtype, null);
  const { core } = s;
  const lr = core.addInput(tensorNames.lr, s.ft, []);
  const step = core.addInput(tensorNames.step, OnnxDataType.INT64, []);
  const gradNorm = core.addInput(tensorNames.gradNorm, s.ft, []);
  const paramValues = new Map<string, string>();
  for (const p of params) paramValues.set(p.name, core.addInput(p.name, s.ft, p.shape));
  for (const p of params) core.addInput(tensorNames.adamM(p.name), s.ft, p.shape);
  for (const p of params) core.addInput(tensorNames.adamV(p.name), s.ft, p.shape);
  const grads = new Map<string, string>();
  for (const p of params) grads.set(p.name, core.addInput(tensorNames.grad(p.name), s.ft, p.shape));
  const opt = s.root.scope('optimizer');
  const squares = new Map<string, string>();
  for (const p of params) squares.set(p.name, opt.mul(grads.get(p.name)!, grads.get(p.name)!));
  emitAdamW(opt, { params, grads, squares, paramValues, gradNorm, lr, step, adamw });
  return s.finish(`adamw_${group}`);
}
