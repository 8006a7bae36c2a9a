import {
  SAFETENSORS_ELEMENT_BYTES,
  type SafetensorsData,
  type SafetensorsDType,
  type SafetensorsTensor,
} from './encode-safetensors';
import { SafetensorsError } from './errors';

/** A decoded safetensors file: tensors in file order (copied out, so aligned) and the metadata. */
export interface SafetensorsFile {
  tensors: Map<string, SafetensorsTensor>;
  metadata: Record<string, string>;
}

/** Header larger than this is refused (the format's own readers cap it at 100 MB). */
const MAX_HEADER_BYTES = 100_000_000;

function copyOut(dtype: SafetensorsDType, bytes: Uint8Array): SafetensorsData {
  // Copy (a Node Buffer's slice() is a view into a shared pool, so copy explicitly).
  const copy = new Uint8Array(bytes.length);
  copy.set(bytes);
  const buf = copy.buffer;
  switch (dtype) {
    case 'F64':
      return new Float64Array(buf);
    case 'F32':
      return new Float32Array(buf);
    case 'F16':
    case 'BF16':
      return new Uint16Array(buf);
    case 'I64':
      return new BigInt64Array(buf);
    case 'I32':
      return new Int32Array(buf);
    case 'I16':
      return new Int16Array(buf);
    case 'I8':
      return new Int8Array(buf);
    case 'U8':
    case 'BOOL':
      return new Uint8Array(buf);
  }
}

/** Parses safetensors bytes, checking the header, every offset and every shape. */
export function decodeSafetensors(bytes: Uint8Array): SafetensorsFile {
  if (bytes.length < 8) throw new SafetensorsError(`file too short (${bytes.length} bytes): no header length`);
  const headerLen = new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true);
  if (headerLen > BigInt(Math.min(MAX_HEADER_BYTES, bytes.length - 8))) {
    throw new SafetensorsError(`header length ${headerLen} exceeds the file (${bytes.length} bytes)`);
  }
  const n = Number(headerLen);
  let header: unknown;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, 8 + n)));
  } catch (err) {
    throw new SafetensorsError('header is not valid UTF-8 JSON', { cause: err });
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header))
    throw new SafetensorsError('header must be a JSON object');
  const dataStart = 8 + n;
  const dataLen = bytes.length - dataStart;
  const tensors = new Map<string, SafetensorsTensor>();
  let metadata: Record<string, string> = {};
  const entries: { name: string; dtype: SafetensorsDType; shape: number[]; begin: number; end: number }[] = [];
  for (const [name, raw] of Object.entries(header as Record<string, unknown>)) {
    if (name === '__metadata__') {
      if (typeof raw !== 'object' || raw === null) throw new SafetensorsError('__metadata__ must be an object');
      for (const [k, v] of Object.entries(raw))
        if (typeof v !== 'string') throw new SafetensorsError(`metadata ${k} is not a string`);
      metadata = { ...(raw as Record<string, string>) };
      continue;
    }
    const info = raw as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    const dtype = info.dtype as SafetensorsDType;
    if (typeof dtype !== 'string' || !(dtype in SAFETENSORS_ELEMENT_BYTES))
      throw new SafetensorsError(`tensor ${name}: unsupported dtype ${JSON.stringify(info.dtype)}`);
    if (!Array.isArray(info.shape) || info.shape.some((d) => !Number.isInteger(d) || d < 0))
      throw new SafetensorsError(`tensor ${name}: bad shape`);
    const off = info.data_offsets;
    if (
      !Array.isArray(off) ||
      off.length !== 2 ||
      !off.every((o) => Number.isInteger(o) && o >= 0) ||
      off[0] > off[1] ||
      off[1] > dataLen
    ) {
      throw new SafetensorsError(
        `tensor ${name}: data_offsets ${JSON.stringify(off)} outside the ${dataLen}-byte data section`,
      );
    }
    const shape = info.shape as number[];
    const count = shape.reduce((a, b) => a * b, 1);
    if (count * SAFETENSORS_ELEMENT_BYTES[dtype] !== off[1] - off[0]) {
      throw new SafetensorsError(`tensor ${name}: shape [${shape.join(', ')}] × ${dtype} ≠ ${off[1] - off[0]} bytes`);
    }
    entries.push({ name, dtype, shape, begin: off[0] as number, end: off[1] as number });
  }
  // The data section must be covered exactly, without holes or overlaps.
  const sorted = [...entries].sort((a, b) => a.begin - b.begin || a.end - b.end);
  let cursor = 0;
  for (const e of sorted) {
    if (e.begin !== cursor)
      throw new SafetensorsError(`tensor ${e.name}: data starts at ${e.begin}, expected ${cursor} (hole or overlap)`);
    cursor = e.end;
  }
  if (cursor !== dataLen) throw new SafetensorsError(`data section has ${dataLen - cursor} trailing bytes`);
  for (const e of sorted) {
    tensors.set(e.name, {
      dtype: e.dtype,
      shape: e.shape,
      data: copyOut(e.dtype, bytes.subarray(dataStart + e.begin, dataStart + e.end)),
    });
  }
  return { tensors, metadata };
}
