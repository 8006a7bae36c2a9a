// The probe child's synthetic feeds, built with native fills, hold exactly what an
// element-by-element loop writes (`i % last` for an arange, the constant otherwise), for every
// tensor type the child feeds and shapes from one row to many.
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { makeTensor } from './_feed-tensor';
import type { FeedFill } from './_synthetic-feeds';

const TYPES = ['int64', 'uint64', 'int32', 'uint32', 'int16', 'uint16', 'int8', 'uint8', 'float32', 'float64'] as const;
const SHAPES = [[1, 7], [3, 5], [2, 3, 4], [5, 1], [4, 128], [1], [3, 1, 9]];
const FILLS: FeedFill[] = [
  { kind: 'constant', value: 0 },
  { kind: 'constant', value: 1 },
  { kind: 'constant', value: 7 },
  { kind: 'arange' },
];

describe('makeTensor (native fills)', () => {
  it('every type × shape × fill: the values of the element-by-element rule', () => {
    let checked = 0;
    for (const type of TYPES) {
      for (const dims of SHAPES) {
        for (const fill of FILLS) {
          const t = makeTensor(ort, { name: 'x', type, dims, fill, batched: true });
          const n = dims.reduce((a, b) => a * b, 1);
          const last = dims.at(-1)!;
          const want = Array.from({ length: n }, (_, i) => (fill.kind === 'arange' ? i % last : fill.value));
          const got = Array.from(t.data as ArrayLike<number | bigint>, (v) => Number(v));
          expect({ type, dims, fill, got }).toEqual({ type, dims, fill, got: want });
          expect(t.dims).toEqual(dims);
          expect(t.type).toBe(type);
          checked += 1;
        }
      }
    }
    expect(checked).toBe(TYPES.length * SHAPES.length * FILLS.length);
  });

  it('bool masks and float16 zeros', () => {
    const mask = makeTensor(ort, {
      name: 'attention_mask',
      type: 'bool',
      dims: [2, 3],
      fill: { kind: 'constant', value: 1 },
      batched: true,
    });
    expect(Array.from(mask.data as Uint8Array)).toEqual([1, 1, 1, 1, 1, 1]);
    const half = makeTensor(ort, {
      name: 'h',
      type: 'float16',
      dims: [2, 2],
      fill: { kind: 'constant', value: 0 },
      batched: false,
    });
    expect(Array.from(half.data as Uint16Array)).toEqual([0, 0, 0, 0]);
  });
});
