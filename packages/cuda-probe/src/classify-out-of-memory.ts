/** What {@link classifyOutOfMemory} found in a piece of output. */
export interface OutOfMemoryClassification {
  /** True when the text reports the device (or host) running out of memory. */
  oom: boolean;
  /**
   * Which catalogue entry matched: an OOM kind (`pytorch-cuda`, `ort-arena`, …) when `oom`,
   * an exclusion (`illegal-address`, `device-assert`) when the text is a crash that must
   * not be read as a fit answer, `null` when nothing matched.
   */
  kind: OutOfMemoryKind | ExcludedKind | null;
  /** The source of the regular expression that matched, `null` when nothing did. */
  pattern: string | null;
  /** The line that matched (trimmed, at most 500 characters), `null` when nothing did. */
  line: string | null;
}

export type OutOfMemoryKind =
  | 'pytorch-cuda'
  | 'pytorch-hip'
  | 'pytorch-mps'
  | 'cuda-error'
  | 'pytorch-cpu'
  | 'ort-arena'
  | 'ort-arena-limit'
  | 'cublas-alloc'
  | 'bad-alloc'
  | 'xla'
  | 'tensorflow'
  | 'node-heap'
  | 'node-buffer'
  | 'generic';

export type ExcludedKind = 'illegal-address' | 'device-assert';

// Crashes that are bugs, not capacity: a poisoned CUDA context after one of these can also
// print allocator errors, so an exclusion wins over any OOM line in the same text.
const EXCLUDED: ReadonlyArray<readonly [ExcludedKind, RegExp]> = [
  ['illegal-address', /an illegal memory access was encountered|cudaErrorIllegalAddress|CUDA_ERROR_ILLEGAL_ADDRESS|illegal address/i],
  ['device-assert', /device-side assert(ion)? triggered|cudaErrorAssert|CUDA_ERROR_ASSERT/i],
];

// Most specific first: the first entry that matches names the kind.
const CATALOGUE: ReadonlyArray<readonly [OutOfMemoryKind, RegExp]> = [
  ['pytorch-cuda', /CUDA out of memory/],
  ['pytorch-hip', /HIP out of memory/],
  ['pytorch-mps', /MPS backend out of memory/],
  ['cuda-error', /CUDA error: out of memory|CUDA_ERROR_OUT_OF_MEMORY|cudaErrorMemoryAllocation|CUDA failure 2: out of memory/],
  ['pytorch-cpu', /DefaultCPUAllocator: can't allocate memory/],
  ['ort-arena', /Failed to allocate memory for requested buffer/],
  ['ort-arena-limit', /Available memory of \d+ is smaller than requested bytes/],
  ['cublas-alloc', /CUBLAS_STATUS_ALLOC_FAILED/],
  ['bad-alloc', /std::bad_alloc|\bbad allocation\b/],
  ['xla', /RESOURCE_EXHAUSTED/],
  ['tensorflow', /OOM when allocating tensor/],
  ['node-heap', /JavaScript heap out of memory|Fatal process out of memory/],
  ['node-buffer', /Array buffer allocation failed/],
  ['generic', /\bout of memory\b/i],
];

function matchLine(text: string, re: RegExp): { line: string } | null {
  const m = re.exec(text);
  if (!m) return null;
  const start = text.lastIndexOf('\n', m.index) + 1;
  const endNl = text.indexOf('\n', m.index);
  const line = text.slice(start, endNl === -1 ? undefined : endNl).trim();
  return { line: line.length > 500 ? `${line.slice(0, 497)}...` : line };
}

/**
 * Reads a trainer's output (stderr, stdout, an exception message) and says whether it
 * reports running out of memory, in the spellings of PyTorch (CUDA / HIP / MPS / CPU),
 * ONNX Runtime (BFC arena, arena limit, cuBLAS, `std::bad_alloc`), XLA, TensorFlow and
 * Node/V8. Illegal-address and device-assert crashes are never OOM, even when the same
 * text also carries an allocator message.
 */
export function classifyOutOfMemory(text: string): OutOfMemoryClassification {
  for (const [kind, re] of EXCLUDED) {
    const hit = matchLine(text, re);
    if (hit) return { oom: false, kind, pattern: re.source, line: hit.line };
  }
  for (const [kind, re] of CATALOGUE) {
    const hit = matchLine(text, re);
    if (hit) return { oom: true, kind, pattern: re.source, line: hit.line };
  }
  return { oom: false, kind: null, pattern: null, line: null };
}
