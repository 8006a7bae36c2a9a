/** Element types a store round-trips (ONNX Runtime's names). */
export type TensorDtype =
  | 'float32'
  | 'float64'
  | 'float16'
  | 'int64'
  | 'uint64'
  | 'int32'
  | 'uint32'
  | 'int16'
  | 'uint16'
  | 'int8'
  | 'uint8'
  | 'bool';

/** The typed array holding each dtype: `float16` as raw bits in a `Uint16Array`, `bool` as 0/1 in a `Uint8Array`. */
export interface TensorDataByDtype {
  float32: Float32Array;
  float64: Float64Array;
  float16: Uint16Array;
  int64: BigInt64Array;
  uint64: BigUint64Array;
  int32: Int32Array;
  uint32: Uint32Array;
  int16: Int16Array;
  uint16: Uint16Array;
  int8: Int8Array;
  uint8: Uint8Array;
  bool: Uint8Array;
}

/** Any tensor data array. */
export type TensorData = TensorDataByDtype[TensorDtype];

/** A host tensor: `data.length` equals the product of `dims`. */
export type OffloadTensor = {
  [D in TensorDtype]: { dtype: D; dims: readonly number[]; data: TensorDataByDtype[D] };
}[TensorDtype];

/**
 * Where a store keeps packed tensors:
 * - `'keep'`: holds the tensor object itself (no copy; the caller must not mutate it) — the no-offload baseline;
 * - `'cpu'`: a private copy in host memory (detached from the producer's buffer);
 * - `'disk'`: one scratch file per tensor in the save dir; nothing stays in memory.
 */
export type OffloadTarget = 'keep' | 'cpu' | 'disk';

/** Counters of one store since it was opened. */
export interface ActivationStoreStats {
  target: OffloadTarget;
  /** Tensors packed. */
  tensorsPacked: number;
  /** Tensors unpacked. */
  tensorsUnpacked: number;
  /** Bytes of tensor data packed, in total. */
  bytesPacked: number;
  /** Bytes the store holds in memory right now (keep / cpu / write fallbacks). */
  residentBytes: number;
  /** Highest `residentBytes` seen. */
  peakResidentBytes: number;
  /** Bytes in this store's scratch files right now. */
  diskBytes: number;
  /** Highest `diskBytes` seen. */
  peakDiskBytes: number;
  /** Scratch files created. */
  filesWritten: number;
  /** Scratch files deleted (by unpack or close). */
  filesDeleted: number;
  /** Disk packs that failed to write and kept the tensor in memory instead. */
  writeFallbacks: number;
  /** Stale files of dead processes removed when the store opened. */
  sweptFiles: number;
}
