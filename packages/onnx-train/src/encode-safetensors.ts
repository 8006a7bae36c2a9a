import { SafetensorsError } from './errors';

/** Element types of the safetensors format. */
export type SafetensorsDType = 'F64' | 'F32' | 'F16' | 'BF16' | 'I64' | 'I32' | 'I16' | 'I8' | 'U8' | 'BOOL';

/** Typed-array data of one tensor. F16/BF16 are raw `Uint16Array` bits, BOOL a `Uint8Array`. */
export type SafetensorsData =
  | Float64Array
  | Float32Array
  | Uint16Array
  | BigInt64Array
  | Int32Array
  | Int16Array
  | Int8Array
  | Uint8Array;

export interface SafetensorsTensor {
  dtype: SafetensorsDType;
  shape: readonly number[];
  data: SafetensorsData;
}

export const SAFETENSORS_ELEMENT_BYTES: Readonly<Record<SafetensorsDType, number>> = {
  F64: 8,
  F32: 4,
  F16: 2,
  BF16: 2,
  I64: 8,
  I32: 4,
  I16: 2,
  I8: 1,
  U8: 1,
  BOOL: 1,
};

const ARRAY_OF: Readonly<Record<SafetensorsDType, { name: string }>> = {
  F64: Float64Array,
  F32: Float32Array,
  F16: Uint16Array,
  BF16: Uint16Array,
  I64: BigInt64Array,
  I32: Int32Array,
  I16: Int16Array,
  I8: Int8Array,
  U8: Uint8Array,
  BOOL: Uint8Array,
};

/** The typed-array class that holds `dtype`. */
export function safetensorsArrayName(dtype: SafetensorsDType): string {
  return ARRAY_OF[dtype].name;
}

/**
 * Serialises tensors in the safetensors format: an 8-byte little-endian header length, a JSON
 * header (`{name: {dtype, shape, data_offsets}}` plus `__metadata__`, padded with spaces to a
 * multiple of 8) and the raw little-endian data, in the iteration order of `tensors`.
 */
export function encodeSafetensors(options: {
  tensors: Iterable<[string, SafetensorsTensor]>;
  metadata?: Readonly<Record<string, string>>;
}): Uint8Array {
  const header: Record<string, unknown> = {};
  if (options.metadata && Object.keys(options.metadata).length > 0) {
    for (const [k, v] of Object.entries(options.metadata)) {
      if (typeof v !== 'string')
        throw new SafetensorsError(`metadata ${k} must be a string (safetensors metadata is string → string)`);
    }
    header.__metadata__ = options.metadata;
  }
  const parts: Uint8Array[] = [];
  let offset = 0;
  for (const [name, t] of options.tensors) {
    if (name === '__metadata__') throw new SafetensorsError('a tensor cannot be named __metadata__');
    if (name in header) throw new SafetensorsError(`tensor ${name} given twice`);
    const bytesPer = SAFETENSORS_ELEMENT_BYTES[t.dtype];
    if (bytesPer === undefined) throw new SafetensorsError(`tensor ${name}: unknown dtype ${String(t.dtype)}`);
    if (t.data.constructor.name !== ARRAY_OF[t.dtype].name) {
      throw new SafetensorsError(
        `tensor ${name}: dtype ${t.dtype} needs a ${ARRAY_OF[t.dtype].name}, got ${t.data.constructor.name}`,
      );
    }
    const count = t.shape.reduce((a, b) => a * b, 1);
    if (t.shape.some((d) => !Number.isInteger(d) || d < 0) || count !== t.data.length) {
      throw new SafetensorsError(
        `tensor ${name}: shape [${t.shape.join(', ')}] does not match its ${t.data.length} values`,
      );
    }
    const bytes = new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
    header[name] = { dtype: t.dtype, shape: [...t.shape], data_offsets: [offset, offset + bytes.length] };
    parts.push(bytes);
    offset += bytes.length;
  }
  let json = JSON.stringify(header);
  const headerBytesRaw = new TextEncoder().encode(json);
  const pad = (8 - (headerBytesRaw.length % 8)) % 8;
  json += ' '.repeat(pad);
  const headerBytes = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + headerBytes.length + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(headerBytes.length), true);
  out.set(headerBytes, 8);
  let pos = 8 + headerBytes.length;
  for (const p of parts) {
    out.set(p, pos);
    pos += p.length;
  }
  return out;
}
