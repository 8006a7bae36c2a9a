// The synthetic feed tensors of a probe child: one tensor per planned input, filled with native
// typed-array operations (the values an element-by-element loop would write).
import type { FeedPlan } from './_synthetic-feeds';

type Ort = typeof import('onnxruntime-node');
type Tensor = InstanceType<Ort['Tensor']>;

/** Writes `row(i)` for i < last into the first row of `arr`, then copies that row over the rest. */
export function fillRows<
  A extends
    | Int8Array
    | Uint8Array
    | Int16Array
    | Uint16Array
    | Int32Array
    | Uint32Array
    | Float32Array
    | Float64Array
    | BigInt64Array
    | BigUint64Array,
>(arr: A, last: number, row: (i: number) => number | bigint): void {
  const n = arr.length;
  const first = Math.min(last, n);
  const a = arr as unknown as {
    [i: number]: number | bigint;
    copyWithin: (t: number, s: number, e: number) => unknown;
  };
  for (let i = 0; i < first; i++) a[i] = row(i);
  for (let filled = first; filled > 0 && filled < n; filled *= 2) a.copyWithin(filled, 0, Math.min(filled, n - filled));
}

export function makeTensor(ort: Ort, plan: FeedPlan): Tensor {
  const n = plan.dims.reduce((a, b) => a * b, 1);
  const last = plan.dims[plan.dims.length - 1] ?? 1;
  const fill = plan.fill;
  // Native fills (a typed array starts zeroed; a constant is one fill(); an arange is its first
  // row copied forward): the same values as an element-by-element loop, which took ~100 ms for
  // the parameters and optimizer state of the training graph.
  const fillNum = <T extends Exclude<Parameters<typeof fillRows>[0], BigInt64Array | BigUint64Array>>(arr: T): T => {
    if (fill.kind === 'arange') fillRows(arr, last, (i) => i);
    else if (fill.value !== 0) (arr as Float32Array).fill(fill.value);
    return arr;
  };
  const fillBig = <T extends BigInt64Array | BigUint64Array>(arr: T): T => {
    if (fill.kind === 'arange') fillRows(arr, last, (i) => BigInt(i));
    else if (fill.value !== 0) (arr as BigInt64Array).fill(BigInt(fill.value));
    return arr;
  };
  switch (plan.type) {
    case 'int64':
      return new ort.Tensor('int64', fillBig(new BigInt64Array(n)), plan.dims);
    case 'uint64':
      return new ort.Tensor('uint64', fillBig(new BigUint64Array(n)), plan.dims);
    case 'int32':
      return new ort.Tensor('int32', fillNum(new Int32Array(n)), plan.dims);
    case 'uint32':
      return new ort.Tensor('uint32', fillNum(new Uint32Array(n)), plan.dims);
    case 'int16':
      return new ort.Tensor('int16', fillNum(new Int16Array(n)), plan.dims);
    case 'uint16':
      return new ort.Tensor('uint16', fillNum(new Uint16Array(n)), plan.dims);
    case 'int8':
      return new ort.Tensor('int8', fillNum(new Int8Array(n)), plan.dims);
    case 'uint8':
      return new ort.Tensor('uint8', fillNum(new Uint8Array(n)), plan.dims);
    case 'float32':
      return new ort.Tensor('float32', fillNum(new Float32Array(n)), plan.dims);
    case 'float64':
      return new ort.Tensor('float64', fillNum(new Float64Array(n)), plan.dims);
    case 'float16':
      if (plan.fill.kind !== 'constant' || plan.fill.value !== 0)
        throw new Error(`float16 input "${plan.name}" can only be fed zeros`);
      return new ort.Tensor('float16', new Uint16Array(n), plan.dims); // 0x0000 is +0.0
    case 'bool':
      return new ort.Tensor(
        'bool',
        new Uint8Array(n).fill(plan.fill.kind === 'constant' ? plan.fill.value : 0),
        plan.dims,
      );
    default:
      throw new Error(`model input "${plan.name}" has type ${plan.type}, which onnxruntime-node cannot feed`);
  }
}
