import { describe, expect, it } from 'vitest';
import { classifyOutOfMemory } from './classify-out-of-memory';

// Each message is written the way the framework prints it (traceback tail included where the
// framework adds one). The ORT and Node ones were captured on this repo's CI machine under
// `prlimit --as`; the others are the frameworks' own formats.
const OOM_MESSAGES: Array<[string, string]> = [
  [
    'pytorch-cuda',
    `Traceback (most recent call last):
  File "/srv/train.py", line 88, in <module>
    loss.backward()
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 23.64 GiB of which 11.44 MiB is free. Including non-PyTorch memory, this process has 23.62 GiB memory in use. Of the allocated memory 23.16 GiB is allocated by PyTorch, and 12.87 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)`,
  ],
  [
    'pytorch-hip',
    `torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 15.98 ` +
      `GiB of which 1.14 GiB is free. Of the allocated memory 13.21 GiB is allocated by PyTorch, and 1.38 GiB is ` +
      `reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting ` +
      `PYTORCH_HIP_ALLOC_CONF=expandable_segments:True to avoid fragmentation.`,
  ],
  [
    'pytorch-mps',
    `RuntimeError: MPS backend out of memory (MPS allocated: 17.79 GB, other allocations: 384.00 KB, max allowed: ` +
      `18.13 GB). Tried to allocate 512.00 MB on private pool. Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable ` +
      `upper limit for memory allocations (may cause system failure).`,
  ],
  [
    'cuda-error',
    `torch.AcceleratorError: CUDA error: out of memory
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1
Compile with \`TORCH_USE_CUDA_DSA\` to enable device-side assertions.`,
  ],
  [
    'pytorch-cpu',
    `RuntimeError: [enforce fail at alloc_cpu.cpp:114] data. DefaultCPUAllocator: can't allocate memory: you ` +
      `tried to allocate 137438953472 bytes. Error code 12 (Cannot allocate memory)`,
  ],
  [
    'ort-arena',
    `2026-11-30 01:52:05.059888830 [E:onnxruntime:, sequential_executor.cc:671 ExecuteKernel] Non-zero status ` +
      `code returned while running MatMul node. Name:'MatMul_hidden' Status Message: ` +
      `/onnxruntime_src/onnxruntime/core/framework/bfc_arena.cc:360 void* ` +
      `onnxruntime::BFCArena::AllocateRawInternal(size_t, bool, onnxruntime::Stream*) Failed to allocate memory ` +
      `for requested buffer of size 2097152000`,
  ],
  [
    'ort-arena-limit',
    `Error: Non-zero status code returned while running Cast node. Name:'graph_output_cast0' Status Message: ` +
      `/onnxruntime_src/onnxruntime/core/framework/bfc_arena.cc:359 void* ` +
      `onnxruntime::BFCArena::AllocateRawInternal(size_t, bool, onnxruntime::Stream*, bool, ` +
      `onnxruntime::WaitNotificationFn) Available memory of 34699008 is smaller than requested bytes of 945041920`,
  ],
  [
    'cublas-alloc',
    `Error: /onnxruntime_src/onnxruntime/core/providers/cuda/cuda_call.cc:129 std::conditional_t<THRW, void, ` +
      `onnxruntime::common::Status> onnxruntime::CudaCall(ERRTYPE, const char*, const char*, SUCCTYPE, const ` +
      `char*, const char*, int) [with ERRTYPE = cublasStatus_t; bool THRW = true; SUCCTYPE = cublasStatus_t; ` +
      `std::conditional_t<THRW, void, onnxruntime::common::Status> = void] CUBLAS failure 3: ` +
      `CUBLAS_STATUS_ALLOC_FAILED ; GPU=0 ; hostname=gpu-runner-2 ; ` +
      `file=/onnxruntime_src/onnxruntime/core/providers/cuda/cuda_execution_provider.cc ; line=168 ; ` +
      `expr=cublasCreate(&cublas_handle_);`,
  ],
  [
    'bad-alloc',
    `2026-11-30 01:52:05.178738397 [E:onnxruntime:, sequential_executor.cc:671 ExecuteKernel] Non-zero status ` +
      `code returned while running MatMul node. Name:'MatMul_hidden' Status Message: std::bad_alloc`,
  ],
  [
    'bad-alloc',
    `Error: Non-zero status code returned while running Gemm node. Name:'/fc1/Gemm' Status Message: bad allocation`,
  ],
  [
    'xla',
    `jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 17179869184 ` +
      `bytes.`,
  ],
  [
    'tensorflow',
    `tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with ` +
      `shape[32,512,512,64] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc ` +
      `[Op:Conv2D]`,
  ],
  [
    'node-heap',
    `<--- Last few GCs --->

[10787:0x1c29be20]       18 ms: Mark-Compact (reduce) 2.6 (5.0) -> 2.6 (4.0) MB, 1.40 / 0.00 ms  (average mu = 0.021, current mu = 0.010) external memory pressure; GC in old space requested

<--- JS stacktrace --->

FATAL ERROR: Committing semi space failed. Allocation failed - JavaScript heap out of memory
----- Native stack trace -----`,
  ],
  [
    'node-buffer',
    `node:internal/buffer:961
    super(bufferOrLength, byteOffset, length);
    ^

RangeError: Array buffer allocation failed
    at new ArrayBuffer (<anonymous>)
    at new Uint8Array (<anonymous>)
    at new FastBuffer (node:internal/buffer:961:5)
    at Function.alloc (node:buffer:397:10)`,
  ],
  [
    'cuda-error',
    `2026-11-30 02:10:11.000000000 [E:onnxruntime:Default, cuda_call.cc:123 CudaCall] CUDA failure 2: out of ` +
      `memory ; GPU=0 ; hostname=gpu-runner-2 ; ` +
      `file=/onnxruntime_src/onnxruntime/core/providers/cuda/cuda_allocator.cc ; line=47 ; ` +
      `expr=cudaMalloc((void**)&p, size);`,
  ],
  ['generic', `jax.errors.JaxRuntimeError: INTERNAL: Failed to allocate 4.00GiB: Out of memory on device`],
];

const NOT_OOM: Array<[string | null, string]> = [
  [
    'illegal-address',
    `RuntimeError: CUDA error: an illegal memory access was encountered
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1`,
  ],
  [
    'device-assert',
    `../aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [0,0,0], thread: [0,0,0] Assertion \`-sizes[i] <= index && index < sizes[i] && "index out of bounds"\` failed.
Traceback (most recent call last):
RuntimeError: CUDA error: device-side assert triggered
Compile with \`TORCH_USE_CUDA_DSA\` to enable device-side assertions.`,
  ],
  [null, `ValueError: Expected input batch_size (8) to match target batch_size (16).`],
  [
    null,
    `Error: Non-zero status code returned while running Reshape node. Name:'/Reshape' Status Message: The input ` +
      `tensor cannot be reshaped to the requested shape. Input shape:{2,64}, requested shape:{3,-1}`,
  ],
];

describe('classifyOutOfMemory', () => {
  it.each(OOM_MESSAGES)('classifies %s as OOM', (kind, text) => {
    const got = classifyOutOfMemory(text);
    expect(got.oom).toBe(true);
    expect(got.kind).toBe(kind);
    expect(got.pattern).toEqual(expect.any(String));
    expect(text).toContain(got.line!.replace(/\.\.\.$/, '')); // long lines are cut at 500 chars
  });

  it.each(NOT_OOM)('does not classify %s as OOM', (kind, text) => {
    const got = classifyOutOfMemory(text);
    expect(got.oom).toBe(false);
    expect(got.kind).toBe(kind);
  });

  it('lets an illegal-address crash win over an allocator line in the same output', () => {
    const text =
      `CUDA error: an illegal memory access was encountered\nCUBLAS_STATUS_ALLOC_FAILED when calling ` +
      `cublasCreate(handle)`;
    expect(classifyOutOfMemory(text)).toMatchObject({ oom: false, kind: 'illegal-address' });
  });

  it('returns the matching line, not the whole text', () => {
    const got = classifyOutOfMemory(
      'step 1 ok\nstep 2: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\nexiting',
    );
    expect(got.line).toBe('step 2: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.');
  });

  it('says nothing matched on empty output', () => {
    expect(classifyOutOfMemory('')).toEqual({ oom: false, kind: null, pattern: null, line: null });
  });
});
