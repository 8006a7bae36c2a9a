// Test/bench helper: writes a tiny ONNX model with a hand-rolled protobuf encoder, so the
// probe tests run a real onnxruntime session without depending on another package's builder.
// Memory of one run grows linearly with the batch: the hidden activation is
// batch × seq × hiddenSize float32 (hiddenSize 4096, seq 64 -> 1 MiB per sequence).
import { writeFileSync } from 'node:fs';

type Bytes = number[];

function varint(out: Bytes, value: number | bigint): void {
  let v = BigInt(value);
  if (v < 0n) v += 1n << 64n;
  while (v >= 0x80n) {
    out.push(Number((v & 0x7fn) | 0x80n));
    v >>= 7n;
  }
  out.push(Number(v));
}

function key(out: Bytes, field: number, wire: number): void {
  varint(out, (field << 3) | wire);
}

function int(out: Bytes, field: number, value: number): void {
  key(out, field, 0);
  varint(out, value);
}

function bytes(out: Bytes, field: number, data: Bytes | Uint8Array): void {
  key(out, field, 2);
  varint(out, data.length);
  for (const b of data) out.push(b);
}

function str(out: Bytes, field: number, value: string): void {
  bytes(out, field, [...Buffer.from(value, 'utf8')]);
}

function msg(out: Bytes, field: number, build: (m: Bytes) => void): void {
  const m: Bytes = [];
  build(m);
  bytes(out, field, m);
}

const ELEM = { float: 1, int32: 6, int64: 7, bool: 9 } as const;
type Elem = keyof typeof ELEM;

export interface TinyInput {
  name: string;
  type: Elem;
  /** Numbers are fixed dims, strings symbolic. */
  shape: Array<number | string>;
}

function valueInfo(out: Bytes, field: number, v: TinyInput): void {
  msg(out, field, (vi) => {
    str(vi, 1, v.name);
    msg(vi, 2, (tp) =>
      msg(tp, 1, (tt) => {
        int(tt, 1, ELEM[v.type]);
        msg(tt, 2, (shape) => {
          for (const d of v.shape) msg(shape, 1, (dim) => (typeof d === 'number' ? int(dim, 1, d) : str(dim, 2, d)));
        });
      }),
    );
  });
}

function floatTensor(out: Bytes, name: string, dims: number[], seed: number): void {
  const n = dims.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  for (let i = 0; i < n; i++) data[i] = (((i * 2654435761 + seed) >>> 0) % 1000) / 1000 - 0.5;
  msg(out, 5, (t) => {
    for (const d of dims) int(t, 1, d);
    int(t, 2, ELEM.float);
    str(t, 8, name);
    bytes(t, 9, new Uint8Array(data.buffer));
  });
}

function node(out: Bytes, op: string, inputs: string[], outputs: string[], attrs: (n: Bytes) => void = () => {}): void {
  msg(out, 1, (n) => {
    for (const i of inputs) str(n, 1, i);
    for (const o of outputs) str(n, 2, o);
    str(n, 3, `${op}_${outputs[0]}`);
    str(n, 4, op);
    attrs(n);
  });
}

export interface TinyModelOptions {
  path: string;
  /** @default 256 */
  vocabSize?: number;
  /** @default 32 */
  dModel?: number;
  /** @default 4096 */
  hiddenSize?: number;
  /** Extra inputs fed into the graph only through a no-op (they must still be supplied). */
  extraInputs?: TinyInput[];
}

/**
 * input_ids [batch, seq] int64 → Gather(embedding) → MatMul(W1: d×hidden) → Relu →
 * MatMul(W2: hidden×d) → ReduceSum → `loss` (scalar). `attention_mask` [batch, seq] int64
 * multiplies the embeddings. Extra inputs are summed into the loss (after a ReduceSum + Cast).
 */
export function writeTinyModel(opts: TinyModelOptions): string {
  const vocab = opts.vocabSize ?? 256;
  const d = opts.dModel ?? 32;
  const h = opts.hiddenSize ?? 4096;
  const model: Bytes = [];
  int(model, 1, 8); // ir_version
  str(model, 2, 'soup-cuda-probe-tests');
  msg(model, 7, (g) => {
    node(g, 'Gather', ['embedding', 'input_ids'], ['emb']);
    node(g, 'Cast', ['attention_mask'], ['mask_f'], (n) =>
      msg(n, 5, (a) => {
        str(a, 1, 'to');
        int(a, 3, ELEM.float);
        int(a, 20, 2);
      }),
    );
    node(g, 'Unsqueeze', ['mask_f', 'axis_last'], ['mask_3d']);
    node(g, 'Mul', ['emb', 'mask_3d'], ['x']);
    node(g, 'MatMul', ['x', 'w1'], ['hidden']);
    node(g, 'Relu', ['hidden'], ['act']);
    node(g, 'MatMul', ['act', 'w2'], ['y']);
    node(g, 'ReduceSum', ['y'], ['loss0'], (n) =>
      msg(n, 5, (a) => {
        str(a, 1, 'keepdims');
        int(a, 3, 0);
        int(a, 20, 2);
      }),
    );
    let last = 'loss0';
    (opts.extraInputs ?? []).forEach((inp, i) => {
      node(g, 'ReduceSum', [inp.name], [`extra_sum_${i}`], (n) =>
        msg(n, 5, (a) => {
          str(a, 1, 'keepdims');
          int(a, 3, 0);
          int(a, 20, 2);
        }),
      );
      let term = `extra_sum_${i}`;
      if (inp.type !== 'float') {
        node(g, 'Cast', [term], [`extra_f_${i}`], (n) =>
          msg(n, 5, (a) => {
            str(a, 1, 'to');
            int(a, 3, ELEM.float);
            int(a, 20, 2);
          }),
        );
        term = `extra_f_${i}`;
      }
      node(g, 'Add', [last, term], [`loss_${i + 1}`]);
      last = `loss_${i + 1}`;
    });
    node(g, 'Identity', [last], ['loss']);
    str(g, 2, 'tiny');
    floatTensor(g, 'embedding', [vocab, d], 1);
    floatTensor(g, 'w1', [d, h], 2);
    floatTensor(g, 'w2', [h, d], 3);
    msg(g, 5, (t) => {
      int(t, 1, 1);
      int(t, 2, ELEM.int64);
      str(t, 8, 'axis_last');
      bytes(t, 9, new Uint8Array(new BigInt64Array([-1n]).buffer));
    });
    valueInfo(g, 11, { name: 'input_ids', type: 'int64', shape: ['batch', 'sequence'] });
    valueInfo(g, 11, { name: 'attention_mask', type: 'int64', shape: ['batch', 'sequence'] });
    for (const inp of opts.extraInputs ?? []) valueInfo(g, 11, inp);
    valueInfo(g, 12, { name: 'loss', type: 'float', shape: [] });
  });
  msg(model, 8, (o) => {
    str(o, 1, '');
    int(o, 2, 17);
  });
  writeFileSync(opts.path, Uint8Array.from(model));
  return opts.path;
}
