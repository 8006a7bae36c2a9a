/** What {@link classifyOutOfMemory} found in a piece of output. */
export interface OutOfMemoryClassification {
  /** True when the text reports the device (or host) running out of memory. */
  oom: boolean;
  /**
   * Which catalogue entry matched: an OOM kind (`pytorch-cuda`, `ort-arena`, …) when `oom`,
   * an exclusion (`illegal-address`, `device-assert`, `nccl`) when the text is a crash that must
   * not be read as a fit answer, `null` when nothing matched.
   */
  kind: OutOfMemoryKind | ExcludedKind | null;
  /** The source of the regular expression that matched, `null` when nothing did. */
  pattern: string | null;
  /** The line that matched (launcher prefix removed, trimmed, at most 500 characters), `null` when nothing did. */
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
  | 'cudnn-alloc'
  | 'bad-alloc'
  | 'xla'
  | 'tensorflow'
  | 'python-memory-error'
  | 'enomem'
  | 'node-heap'
  | 'node-buffer'
  | 'generic';

/** Crashes that are not a capacity answer. `nccl` loses to an OOM raised by another rank. */
export type ExcludedKind = 'illegal-address' | 'device-assert' | 'nccl';

// Crashes that are bugs, not capacity: a poisoned CUDA context after one of these can also
// print allocator errors, so these win over any OOM line in the same text.
const CRASHES: ReadonlyArray<readonly [ExcludedKind, RegExp]> = [
  [
    'illegal-address',
    /an illegal memory access was encountered|cudaErrorIllegalAddress|CUDA_ERROR_ILLEGAL_ADDRESS|illegal address/i,
  ],
  ['device-assert', /device-side assert(ion)? triggered|cudaErrorAssert|CUDA_ERROR_ASSERT/i],
];

// A collective failing (timeout, watchdog, a peer gone, NCCL's own CUDA call) is not this rank
// running out of memory, even when NCCL's message quotes a CUDA "out of memory": the line is
// NCCL's, so it is read as NCCL. An OOM raised elsewhere in the same output still wins.
const NCCL =
  /\bNCCL (error|WARN)|\bnccl(UnhandledCudaError|SystemError|InternalError|InvalidUsage|RemoteError)\b|ProcessGroupNCCL|NCCL communicator|DistBackendError/;

// Most specific first: the first entry that matches names the kind.
const CATALOGUE: ReadonlyArray<readonly [OutOfMemoryKind, RegExp]> = [
  ['pytorch-cuda', /CUDA out of memory/],
  ['pytorch-hip', /HIP out of memory/],
  ['pytorch-mps', /MPS backend out of memory/],
  [
    'cuda-error',
    /CUDA error: out of memory|CUDA_ERROR_OUT_OF_MEMORY|cudaErrorMemoryAllocation|CUDA failure 2: out of memory|hipErrorOutOfMemory/,
  ],
  ['pytorch-cpu', /DefaultCPUAllocator: can't allocate memory/],
  ['ort-arena', /Failed to allocate memory for requested buffer/],
  ['ort-arena-limit', /Available memory of \d+ is smaller than requested bytes/],
  ['cublas-alloc', /CUBLAS_STATUS_ALLOC_FAILED/],
  ['cudnn-alloc', /CUDNN_STATUS_ALLOC_FAILED/],
  ['bad-alloc', /std::bad_alloc|\bbad allocation\b/],
  // XLA / JAX / TF spell a device OOM RESOURCE_EXHAUSTED *with* a memory word; gRPC uses the same
  // status for a quota or rate limit ("StatusCode.RESOURCE_EXHAUSTED ... Quota exceeded"), which is not memory.
  ['xla', /RESOURCE_EXHAUSTED\b(?!.*\b(quota|rate limit|StatusCode)\b).*\b(out of memory|OOM|allocat\w*|memory)\b/i],
  ['tensorflow', /OOM when allocating tensor|ResourceExhaustedError\b(?!.*quota)/],
  ['python-memory-error', /^(?:[\w.]*\.)?\w*MemoryError(?::|$)/],
  ['enomem', /Cannot allocate memory|\bENOMEM\b/],
  ['node-heap', /JavaScript heap out of memory|Fatal process out of memory/],
  ['node-buffer', /Array buffer allocation failed/],
  ['generic', /\bout[ -]of[ -]memory\b/i],
];

// Launchers prefix each line of a rank: torchrun `[rank0]:`, accelerate/elastic `[default0]:`,
// `torchrun --tee` / `srun -l` `0: `, mpirun `[1,0]<stderr>:`.
const LAUNCHER_PREFIX = /^(?:\s*(?:\[(?:rank|default)\d+\]:|\[\d+,\d+\]<std(?:err|out)>:|\d+:(?=\s)))+\s?/;

/** Removes the per-rank prefix a launcher (torchrun, accelerate, deepspeed, srun, mpirun) puts on a line. */
export function stripLauncherPrefix(line: string): string {
  return line.replace(LAUNCHER_PREFIX, '');
}

function cut(line: string): string {
  const t = line.trim();
  return t.length > 500 ? `${t.slice(0, 497)}...` : t;
}

/** One line's verdict, or null when the line says nothing about memory or crashes. */
export function classifyLine(raw: string): OutOfMemoryClassification | null {
  const line = stripLauncherPrefix(raw);
  for (const [kind, re] of CRASHES) if (re.test(line)) return { oom: false, kind, pattern: re.source, line: cut(line) };
  if (NCCL.test(line)) return { oom: false, kind: 'nccl', pattern: NCCL.source, line: cut(line) };
  for (const [kind, re] of CATALOGUE) {
    if (re.test(line.trim())) return { oom: true, kind, pattern: re.source, line: cut(line) };
  }
  return null;
}

const EXCEPTION_START = /^(?:[\w.]+\.)?\w*(Error|Exception)\b(?!.*\bNCCL\b)/;

const NOTHING: OutOfMemoryClassification = { oom: false, kind: null, pattern: null, line: null };

/**
 * Reads error output (an exception message, the lines a trainer raised) and says whether it
 * reports running out of memory, in the spellings of PyTorch (CUDA / HIP / MPS / CPU),
 * ONNX Runtime (BFC arena, arena limit, cuBLAS, cuDNN, `std::bad_alloc`), XLA/JAX, TensorFlow,
 * Python (`MemoryError`, ENOMEM) and Node/V8. Launcher prefixes (`[rank0]:`, `[default0]:`,
 * `0: `) are ignored. Illegal-address and device-assert crashes are never OOM, even when the
 * same text carries an allocator message; an NCCL error is not OOM unless another line is.
 *
 * It judges every line it is given: to judge a whole trainer log, give it only what the trainer
 * raised (the command probe does, see README "How a failed trial is judged").
 */
export function classifyOutOfMemory(text: string): OutOfMemoryClassification {
  let oom: OutOfMemoryClassification | null = null;
  let nccl: OutOfMemoryClassification | null = null;
  let best = Infinity;
  let inNccl = false;
  for (const line of text.split('\n')) {
    // Within one paragraph, the lines after an NCCL error are NCCL's message ("Last error:
    // Cuda failure 'out of memory'"), until another exception starts.
    if (line.trim() === '' || EXCEPTION_START.test(stripLauncherPrefix(line))) inNccl = false;
    const c = inNccl ? null : classifyLine(line);
    if (!c) continue;
    if (c.kind === 'illegal-address' || c.kind === 'device-assert') return c;
    if (c.kind === 'nccl') {
      nccl ??= c;
      inNccl = true;
    } else {
      // The most specific catalogue entry across all lines names the kind.
      const rank = CATALOGUE.findIndex(([k]) => k === c.kind);
      if (rank < best) {
        best = rank;
        oom = c;
      }
    }
  }
  return oom ?? nccl ?? NOTHING;
}
