// A small, self-contained protobuf writer for the subset of onnx.proto that soup emits
// (ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto, ValueInfoProto).
// Field numbers follow onnx/onnx.proto (proto2 syntax); repeated scalars are written
// unpacked, which every protobuf parser accepts.

/** ONNX TensorProto.DataType values soup uses. */
export const OnnxDataType = {
  FLOAT: 1,
  INT32: 6,
  INT64: 7,
  BOOL: 9,
  DOUBLE: 11,
} as const;
export type OnnxDataTypeCode = (typeof OnnxDataType)[keyof typeof OnnxDataType];

/** A growable byte buffer with protobuf wire-format primitives. */
export class ProtoWriter {
  private buf: Uint8Array = new Uint8Array(256);
  private len = 0;

  private ensure(extra: number): void {
    if (this.len + extra <= this.buf.length) return;
    let cap = this.buf.length * 2;
    while (cap < this.len + extra) cap *= 2;
    const next = new Uint8Array(cap);
    next.set(this.buf.subarray(0, this.len));
    this.buf = next;
  }

  private byte(b: number): void {
    this.ensure(1);
    this.buf[this.len++] = b;
  }

  /** Unsigned or signed varint; negative numbers become 10-byte two's complement, as int64 requires. */
  varint(value: number | bigint): void {
    let v = typeof value === 'bigint' ? value : BigInt(value);
    if (v < 0n) v = BigInt.asUintN(64, v);
    if (v < 0x80n) {
      this.byte(Number(v));
      return;
    }
    while (v >= 0x80n) {
      this.byte(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    this.byte(Number(v));
  }

  private tag(field: number, wireType: number): void {
    this.varint((field << 3) | wireType);
  }

  int(field: number, value: number | bigint): void {
    this.tag(field, 0);
    this.varint(value);
  }

  float32(field: number, value: number): void {
    this.tag(field, 5);
    this.ensure(4);
    new DataView(this.buf.buffer, this.buf.byteOffset + this.len, 4).setFloat32(0, value, true);
    this.len += 4;
  }

  bytes(field: number, data: Uint8Array): void {
    this.tag(field, 2);
    this.varint(data.length);
    this.ensure(data.length);
    this.buf.set(data, this.len);
    this.len += data.length;
  }

  string(field: number, value: string): void {
    this.bytes(field, new TextEncoder().encode(value));
  }

  /** An embedded message written by `fill` into a fresh writer. */
  message(field: number, fill: (w: ProtoWriter) => void): void {
    const inner = new ProtoWriter();
    fill(inner);
    this.bytes(field, inner.finish());
  }

  finish(): Uint8Array {
    return this.buf.slice(0, this.len);
  }
}

/** One attribute of a node. */
export type AttributeValue =
  | { kind: 'int'; value: number }
  | { kind: 'float'; value: number }
  | { kind: 'string'; value: string }
  | { kind: 'ints'; value: readonly number[] }
  | { kind: 'floats'; value: readonly number[] }
  | { kind: 'tensor'; value: TensorValue }
  /** A subgraph (the branches of `If`). */
  | { kind: 'graph'; value: GraphDef };

export interface TensorValue {
  name?: string;
  dataType: OnnxDataTypeCode;
  dims: readonly number[];
  /** Little-endian raw bytes of the elements. */
  raw: Uint8Array;
}

export interface NodeDef {
  opType: string;
  domain?: string;
  name: string;
  inputs: readonly string[];
  outputs: readonly string[];
  attributes?: Readonly<Record<string, AttributeValue>>;
}

/** A dimension: a fixed size or a symbolic name (e.g. `batch`). */
export type DimValue = number | string;

export interface ValueInfoDef {
  name: string;
  dataType: OnnxDataTypeCode;
  /** `undefined` = rank unknown (no shape written). */
  shape?: readonly DimValue[];
}

export interface GraphDef {
  name: string;
  nodes: readonly NodeDef[];
  initializers: readonly TensorValue[];
  inputs: readonly ValueInfoDef[];
  outputs: readonly ValueInfoDef[];
}

export interface ModelDef {
  irVersion: number;
  opsets: readonly { domain: string; version: number }[];
  producerName: string;
  producerVersion: string;
  docString?: string;
  graph: GraphDef;
}

const ATTR_TYPE = { float: 1, int: 2, string: 3, tensor: 4, graph: 5, floats: 6, ints: 7 } as const;

function writeTensor(w: ProtoWriter, t: TensorValue): void {
  for (const d of t.dims) w.int(1, d);
  w.int(2, t.dataType);
  if (t.name !== undefined) w.string(8, t.name);
  w.bytes(9, t.raw);
}

function writeAttribute(w: ProtoWriter, name: string, a: AttributeValue): void {
  w.string(1, name);
  switch (a.kind) {
    case 'float':
      w.float32(2, a.value);
      break;
    case 'int':
      w.int(3, a.value);
      break;
    case 'string':
      w.string(4, a.value);
      break;
    case 'tensor':
      w.message(5, (t) => writeTensor(t, a.value));
      break;
    case 'graph':
      w.message(6, (g) => writeGraph(g, a.value));
      break;
    case 'floats':
      for (const f of a.value) w.float32(7, f);
      break;
    case 'ints':
      for (const i of a.value) w.int(8, i);
      break;
  }
  w.int(20, ATTR_TYPE[a.kind]);
}

function writeNode(w: ProtoWriter, n: NodeDef): void {
  for (const i of n.inputs) w.string(1, i);
  for (const o of n.outputs) w.string(2, o);
  w.string(3, n.name);
  w.string(4, n.opType);
  for (const [k, a] of Object.entries(n.attributes ?? {})) w.message(5, (aw) => writeAttribute(aw, k, a));
  if (n.domain) w.string(7, n.domain);
}

function writeValueInfo(w: ProtoWriter, v: ValueInfoDef): void {
  w.string(1, v.name);
  w.message(2, (type) =>
    type.message(1, (tensorType) => {
      tensorType.int(1, v.dataType);
      if (v.shape !== undefined) {
        const shape = v.shape;
        tensorType.message(2, (sw) => {
          for (const d of shape) {
            sw.message(1, (dw) => {
              if (typeof d === 'number') dw.int(1, d);
              else dw.string(2, d);
            });
          }
        });
      }
    }),
  );
}

function writeGraph(g: ProtoWriter, graph: GraphDef): void {
  for (const n of graph.nodes) g.message(1, (nw) => writeNode(nw, n));
  g.string(2, graph.name);
  for (const t of graph.initializers) g.message(5, (tw) => writeTensor(tw, t));
  for (const v of graph.inputs) g.message(11, (vw) => writeValueInfo(vw, v));
  for (const v of graph.outputs) g.message(12, (vw) => writeValueInfo(vw, v));
}

/** Serialises a ModelProto. */
export function encodeModel(m: ModelDef): Uint8Array {
  const w = new ProtoWriter();
  w.int(1, m.irVersion);
  w.string(2, m.producerName);
  w.string(3, m.producerVersion);
  if (m.docString) w.string(6, m.docString);
  w.message(7, (g) => writeGraph(g, m.graph));
  for (const o of m.opsets) {
    w.message(8, (ow) => {
      if (o.domain) ow.string(1, o.domain);
      ow.int(2, o.version);
    });
  }
  return w.finish();
}
