import { TensorFormatError } from './errors';
import type { OffloadTensor, TensorData, TensorDtype } from './types';

type TypedArrayCtor = new (buffer: ArrayBuffer, byteOffset?: number, length?: number) => TensorData;

const CTORS: Record<TensorDtype, TypedArrayCtor> = {
  float32: Float32Array,
  float64: Float64Array,
  float16: Uint16Array,
  int64: BigInt64Array,
  uint64: BigUint64Array,
  int32: Int32Array,
  uint32: Uint32Array,
  int16: Int16Array,
  uint16: Uint16Array,
  int8: Int8Array,
  uint8: Uint8Array,
  bool: Uint8Array,
};

/** Every dtype a store accepts. */
export const DTYPES: readonly TensorDtype[] = Object.keys(CTORS) as TensorDtype[];

/** Checks dtype, array class and dims; returns the data's bytes as a view (no copy). */
export function tensorBytes(tensor: OffloadTensor): Uint8Array {
  if (tensor === null || typeof tensor !== 'object') {
    throw new TensorFormatError('pack(tensor): tensor must be an object {dtype, dims, data}');
  }
  const { dtype, dims, data } = tensor as { dtype: unknown; dims: unknown; data: unknown };
  if (typeof dtype !== 'string' || !Object.hasOwn(CTORS, dtype)) {
    throw new TensorFormatError(
      `pack(tensor): tensor.dtype ${JSON.stringify(dtype)} is not one of ${DTYPES.join(', ')}`,
    );
  }
  const ctor = CTORS[dtype as TensorDtype];
  const float16Native = dtype === 'float16' && isFloat16Array(data);
  if (!(data instanceof ctor) && !float16Native) {
    throw new TensorFormatError(
      `pack(tensor): tensor.data for dtype '${dtype}' must be a ${ctor.name}, got ${describe(data)}`,
    );
  }
  if (!Array.isArray(dims) || !dims.every((d) => Number.isSafeInteger(d) && d >= 0)) {
    throw new TensorFormatError(
      `pack(tensor): tensor.dims must be an array of integers ≥ 0, got ${JSON.stringify(dims)}`,
    );
  }
  const view = data as TensorData;
  const count = dims.reduce((a: number, b: number) => a * b, 1);
  if (count !== view.length) {
    throw new TensorFormatError(
      `pack(tensor): tensor.dims [${dims.join(', ')}] hold ${count} elements but tensor.data has ${view.length}`,
    );
  }
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
}

/** A fresh typed array of `dtype` over `buffer` (which must be exactly the tensor's bytes). */
export function fromBuffer(dtype: TensorDtype, buffer: ArrayBuffer): TensorData {
  return new CTORS[dtype](buffer);
}

function isFloat16Array(data: unknown): boolean {
  const f16 = (globalThis as { Float16Array?: new () => unknown }).Float16Array;
  return f16 !== undefined && data instanceof f16;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'object') return (value as object).constructor?.name ?? 'object';
  return typeof value;
}
