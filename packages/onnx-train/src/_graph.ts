// A tiny ONNX graph builder: named values, scoped node names, deduplicated constants.
// Emitters (the layer modules) only see `Emitter`; a whole model is one `GraphCore`.
import {
  encodeModel,
  OnnxDataType,
  type AttributeValue,
  type DimValue,
  type NodeDef,
  type OnnxDataTypeCode,
  type TensorValue,
  type ValueInfoDef,
} from './_proto';

/** Floating-point precision of a built graph. */
export type FloatDType = 'float32' | 'float64';

/** The opset soup emits. Only operators whose newest schema is ≤ 17 or unchanged in 18 are used,
 * so Debian's python3-onnx 1.12 checker (which knows schemas up to 17) can validate the model. */
export const ONNX_OPSET = 18;
export const ONNX_IR_VERSION = 8;

export function floatTypeCode(dtype: FloatDType): OnnxDataTypeCode {
  return dtype === 'float64' ? OnnxDataType.DOUBLE : OnnxDataType.FLOAT;
}

type AttrInput = number | string | readonly number[] | AttributeValue;

function toAttr(v: AttrInput, floatAttr: boolean): AttributeValue {
  if (typeof v === 'object' && v !== null && 'kind' in v) return v;
  if (typeof v === 'string') return { kind: 'string', value: v };
  if (typeof v === 'number') return floatAttr ? { kind: 'float', value: v } : { kind: 'int', value: v };
  return floatAttr ? { kind: 'floats', value: v } : { kind: 'ints', value: v };
}

/** Attributes whose numbers are floats (everything else numeric is an int). */
const FLOAT_ATTRS = new Set(['alpha', 'beta', 'epsilon']);

export class GraphCore {
  readonly nodes: NodeDef[] = [];
  readonly initializers: TensorValue[] = [];
  readonly inputs: ValueInfoDef[] = [];
  readonly outputs: ValueInfoDef[] = [];
  private readonly constCache = new Map<string, string>();
  private readonly usedNames = new Set<string>();
  private counter = 0;

  constructor(readonly dtype: FloatDType) {}

  get floatType(): OnnxDataTypeCode {
    return floatTypeCode(this.dtype);
  }

  /** A value name not used before, derived from `base`. */
  fresh(base: string): string {
    let name = `${base}_${this.counter++}`;
    while (this.usedNames.has(name)) name = `${base}_${this.counter++}`;
    this.usedNames.add(name);
    return name;
  }

  reserve(name: string): void {
    if (this.usedNames.has(name)) throw new Error(`graph value name used twice: ${name}`);
    this.usedNames.add(name);
  }

  addInput(name: string, dataType: OnnxDataTypeCode, shape: readonly DimValue[]): string {
    this.reserve(name);
    this.inputs.push({ name, dataType, shape });
    return name;
  }

  addOutput(name: string, dataType: OnnxDataTypeCode, shape?: readonly DimValue[]): void {
    this.outputs.push(shape === undefined ? { name, dataType } : { name, dataType, shape });
  }

  constant(key: string, make: () => TensorValue): string {
    const hit = this.constCache.get(key);
    if (hit !== undefined) return hit;
    const t = make();
    const name = this.fresh('const');
    this.initializers.push({ ...t, name });
    this.constCache.set(key, name);
    return name;
  }

  /**
   * Drops nodes none of whose outputs reach a graph output, and initializers nobody reads.
   * ORT does not eliminate dead nodes itself: it runs them last, which would keep their
   * inputs (e.g. a recomputed block's unused output) alive to the end of the step.
   */
  prune(): void {
    const needed = new Set(this.outputs.map((o) => o.name));
    const keep = new Array<boolean>(this.nodes.length).fill(false);
    for (let i = this.nodes.length - 1; i >= 0; i--) {
      const n = this.nodes[i]!;
      if (n.outputs.some((o) => needed.has(o))) {
        keep[i] = true;
        for (const inp of n.inputs) needed.add(inp);
      }
    }
    const live = this.nodes.filter((_, i) => keep[i]);
    this.nodes.length = 0;
    this.nodes.push(...live);
    const liveInits = this.initializers.filter((t) => needed.has(t.name!));
    this.initializers.length = 0;
    this.initializers.push(...liveInits);
  }

  encode(opts: { graphName: string; docString?: string; producerVersion: string }): Uint8Array {
    this.prune();
    return encodeModel({
      irVersion: ONNX_IR_VERSION,
      opsets: [{ domain: '', version: ONNX_OPSET }],
      producerName: '@soup/onnx-train',
      producerVersion: opts.producerVersion,
      ...(opts.docString !== undefined ? { docString: opts.docString } : {}),
      graph: {
        name: opts.graphName,
        nodes: this.nodes,
        initializers: this.initializers,
        inputs: this.inputs,
        outputs: this.outputs,
      },
    });
  }
}

function rawFloats(values: readonly number[], dtype: FloatDType): Uint8Array {
  const arr = dtype === 'float64' ? new Float64Array(values) : new Float32Array(values);
  return new Uint8Array(arr.buffer);
}

/** Emits nodes under a name scope (e.g. `h.0.attn/bwd`). */
export class Emitter {
  constructor(
    readonly core: GraphCore,
    readonly prefix: string,
  ) {}

  get dtype(): FloatDType {
    return this.core.dtype;
  }

  scope(name: string): Emitter {
    return new Emitter(this.core, this.prefix ? `${this.prefix}/${name}` : name);
  }

  /** Emits one node; returns its output value names. `outputNames` fixes names (e.g. graph outputs). */
  op(
    opType: string,
    inputs: readonly string[],
    attrs: Readonly<Record<string, AttrInput>> = {},
    opts: { outputs?: number; outputNames?: readonly string[] } = {},
  ): string[] {
    const base = this.prefix ? `${this.prefix}/${opType}` : opType;
    const nodeName = this.core.fresh(base);
    const outputs =
      opts.outputNames?.map((n) => {
        this.core.reserve(n);
        return n;
      }) ?? Array.from({ length: opts.outputs ?? 1 }, (_, i) => (i === 0 ? `${nodeName}:0` : `${nodeName}:${i}`));
    const attributes: Record<string, AttributeValue> = {};
    for (const [k, v] of Object.entries(attrs)) attributes[k] = toAttr(v, FLOAT_ATTRS.has(k));
    this.core.nodes.push({ opType, name: nodeName, inputs, outputs, attributes });
    return outputs;
  }

  op1(
    opType: string,
    inputs: readonly string[],
    attrs: Readonly<Record<string, AttrInput>> = {},
    outputName?: string,
  ): string {
    const out = this.op(opType, inputs, attrs, outputName === undefined ? {} : { outputNames: [outputName] });
    return out[0]!;
  }

  /** A float constant in the graph's dtype (scalar when `dims` is omitted). */
  scalar(value: number): string {
    return this.floats([value], []);
  }

  floats(values: readonly number[], dims: readonly number[]): string {
    const dtype = this.dtype;
    const key =
      `f:${dtype}:${dims.join(',')}:` +
      `${values.length <= 16 ? values.join(',') : `big${this.core.initializers.length}`}`;
    return this.core.constant(key, () => ({ dataType: floatTypeCode(dtype), dims, raw: rawFloats(values, dtype) }));
  }

  /** An int64 constant (1-D unless `dims` says otherwise). */
  i64(values: readonly number[], dims: readonly number[] = [values.length]): string {
    const key = `i64:${dims.join(',')}:${values.join(',')}`;
    return this.core.constant(key, () => ({
      dataType: OnnxDataType.INT64,
      dims,
      raw: new Uint8Array(new BigInt64Array(values.map((v) => BigInt(v))).buffer),
    }));
  }

  add(a: string, b: string, out?: string): string {
    return this.op1('Add', [a, b], {}, out);
  }
  sub(a: string, b: string, out?: string): string {
    return this.op1('Sub', [a, b], {}, out);
  }
  mul(a: string, b: string, out?: string): string {
    return this.op1('Mul', [a, b], {}, out);
  }
  div(a: string, b: string, out?: string): string {
    return this.op1('Div', [a, b], {}, out);
  }
  matmul(a: string, b: string): string {
    return this.op1('MatMul', [a, b]);
  }
  /** 2-D Gemm: `op(a) @ op(b) (+ c)`. */
  gemm(a: string, b: string, opts: { c?: string; transA?: boolean; transB?: boolean } = {}): string {
    const attrs: Record<string, number> = {};
    if (opts.transA) attrs.transA = 1;
    if (opts.transB) attrs.transB = 1;
    return this.op1('Gemm', opts.c === undefined ? [a, b] : [a, b, opts.c], attrs);
  }
  unary(opType: 'Sqrt' | 'Exp' | 'Tanh' | 'Neg' | 'Reciprocal' | 'Identity', x: string): string {
    return this.op1(opType, [x]);
  }
  reshape(x: string, dims: readonly number[]): string {
    return this.op1('Reshape', [x, this.i64(dims)]);
  }
  transpose(x: string, perm: readonly number[]): string {
    return this.op1('Transpose', [x], { perm });
  }
  reduceSum(x: string, axes: readonly number[], keepdims: boolean): string {
    return this.op1('ReduceSum', [x, this.i64(axes)], { keepdims: keepdims ? 1 : 0 });
  }
  /** Mean over `axes` whose total size is `count` (ReduceSum × 1/count: ReduceMean changed schema in opset 18). */
  reduceMean(x: string, axes: readonly number[], count: number, keepdims: boolean): string {
    return this.mul(this.reduceSum(x, axes, keepdims), this.scalar(1 / count));
  }
  cast(x: string, to: OnnxDataTypeCode): string {
    return this.op1('Cast', [x], { to });
  }
  castFloat(x: string): string {
    return this.cast(x, floatTypeCode(this.dtype));
  }
}
