// Error-corpus cases of the GPU and tensor runtimes: PyTorch (CUDA, HIP, MPS, CPU) and ONNX Runtime.
import { type CorpusCase, TB, frames } from './corpus-case';

export const RUNTIME_CASES: CorpusCase[] = [
  // --- PyTorch CUDA ---
  {
    name: 'torch 1.13 CUDA OOM',
    exitCode: 1,
    expect: 'oom:pytorch-cuda',
    stderr:
      `${TB}\n${frames()}\nRuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 23.69 GiB ` +
      `total capacity; 22.91 GiB already allocated; 11.44 MiB free; 23.05 GiB reserved in total by PyTorch) If ` +
      `reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See ` +
      `documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF`,
  },
  {
    name: 'torch 2.0 torch.cuda.OutOfMemoryError',
    exitCode: 1,
    expect: 'oom:pytorch-cuda',
    stderr:
      `${TB}\n${frames()}\ntorch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB (GPU ` +
      `0; 79.15 GiB total capacity; 76.02 GiB already allocated; 1.19 GiB free; 77.10 GiB reserved in total by ` +
      `PyTorch)`,
  },
  {
    name: 'torch 2.5 torch.OutOfMemoryError',
    exitCode: 1,
    expect: 'oom:pytorch-cuda',
    stderr:
      `${TB}\n${frames()}\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 ` +
      `has a total capacity of 23.64 GiB of which 11.44 MiB is free. Including non-PyTorch memory, this process ` +
      `has 23.62 GiB memory in use.`,
  },
  {
    name: 'torch 2.8 AcceleratorError at synchronize',
    exitCode: 1,
    expect: 'oom:cuda-error',
    stderr:
      `${TB}\n${frames()}\ntorch.AcceleratorError: CUDA error: out of memory\nCUDA kernel errors might be ` +
      `asynchronously reported at some other API call, so the stacktrace below might be incorrect.\nFor debugging ` +
      `consider passing CUDA_LAUNCH_BLOCKING=1`,
  },
  {
    name: 'torch RuntimeError CUDA error: out of memory (WDDM)',
    exitCode: 1,
    expect: 'oom:cuda-error',
    stderr:
      `${TB}\n${frames()}\nRuntimeError: CUDA error: out of memory\nCompile with \`TORCH_USE_CUDA_DSA\` to ` +
      `enable device-side assertions.`,
  },
  {
    name: 'torchrun [rank0]: prefixed OOM with ChildFailedError summary',
    exitCode: 1,
    expect: 'oom:pytorch-cuda',
    stderr:
      `[rank0]: ${TB}\n[rank0]:   File "/srv/train.py", line 88, in <module>\n[rank0]:     ` +
      `loss.backward()\n[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has ` +
      `a total capacity of 79.10 GiB of which 1.02 GiB is free.\nE1130 01:02:03.000000 1234 ` +
      `torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) local_rank: 0 (pid: 4321) of ` +
      `binary: /usr/bin/python3\n${TB}\n  File "/usr/local/bin/torchrun", line 8, in <module>\n    ` +
      `sys.exit(main())\ntorch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n` +
      `============================================================\ntrain.py FAILED`,
  },
  {
    name: 'accelerate [default0]: prefixed OOM',
    exitCode: 1,
    expect: 'oom:pytorch-cuda',
    stderr:
      `[default0]:${TB}\n[default0]:  File "/srv/train.py", line 88, in <module>\n[default0]:    ` +
      `trainer.train()\n[default0]:torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB ` +
      `(GPU 0; 39.39 GiB total capacity; 37.80 GiB already allocated)`,
  },
  {
    name: 'srun -l "0: " prefixed OOM',
    exitCode: 1,
    expect: 'oom:pytorch-cuda',
    stderr:
      `0: ${TB}\n0:   File "/srv/train.py", line 88, in <module>\n0:     loss.backward()\n0: ` +
      `torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 MiB.\nsrun: error: gpu-17: task 0: ` +
      `Exited with exit code 1`,
  },
  {
    name: 'chained: OOM caught and re-raised as RuntimeError',
    exitCode: 1,
    expect: 'oom:pytorch-cuda',
    stderr:
      `${TB}\n${frames()}\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB.\n\nThe ` +
      `above exception was the direct cause of the following exception:\n\n${TB}\n  File "/srv/train.py", line 99, ` +
      `in <module>\n    run()\nRuntimeError: training step failed`,
  },
  // --- HIP / MPS / CPU ---
  {
    name: 'ROCm HIP OOM',
    exitCode: 1,
    expect: 'oom:pytorch-hip',
    stderr:
      `${TB}\n${frames()}\ntorch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has ` +
      `a total capacity of 15.98 GiB of which 1.14 GiB is free.`,
  },
  {
    name: 'ROCm hipErrorOutOfMemory',
    exitCode: 1,
    expect: 'oom:cuda-error',
    stderr:
      `${TB}\n${frames()}\nRuntimeError: HIP error: hipErrorOutOfMemory\nHIP kernel errors might be ` +
      `asynchronously reported at some other API call`,
  },
  {
    name: 'Apple MPS OOM',
    exitCode: 1,
    expect: 'oom:pytorch-mps',
    stderr:
      `${TB}\n${frames()}\nRuntimeError: MPS backend out of memory (MPS allocated: 17.79 GB, other ` +
      `allocations: 384.00 KB, max allowed: 18.13 GB). Tried to allocate 512.00 MB on private pool.`,
  },
  {
    name: 'torch CPU DefaultCPUAllocator',
    exitCode: 1,
    expect: 'oom:pytorch-cpu',
    stderr:
      `${TB}\n${frames()}\nRuntimeError: [enforce fail at alloc_cpu.cpp:114] data. DefaultCPUAllocator: ` +
      `can't allocate memory: you tried to allocate 137438953472 bytes. Error code 12 (Cannot allocate memory)`,
  },
  {
    name: 'cuDNN CUDNN_STATUS_ALLOC_FAILED',
    exitCode: 1,
    expect: 'oom:cudnn-alloc',
    stderr: `${TB}\n${frames()}\nRuntimeError: cuDNN error: CUDNN_STATUS_ALLOC_FAILED`,
  },
  {
    name: 'cuBLAS CUBLAS_STATUS_ALLOC_FAILED from torch',
    exitCode: 1,
    expect: 'oom:cublas-alloc',
    stderr:
      `${TB}\n${frames()}\nRuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling ` +
      `\`cublasCreate(handle)\``,
  },
  // --- ONNX Runtime ---
  {
    name: 'ORT python CPU arena',
    exitCode: 1,
    expect: 'oom:ort-arena',
    stderr:
      `2026-11-30 01:52:05.059 [E:onnxruntime:, sequential_executor.cc:516 ExecuteKernel] Non-zero status ` +
      `code returned while running MatMul node.\n${TB}\n  File "/srv/step.py", line 12, in <module>\n    ` +
      `sess.run(None, feeds)\nonnxruntime.capi.onnxruntime_pybind11_state.RuntimeException: [ONNXRuntimeError] : 6 ` +
      `: RUNTIME_EXCEPTION : Non-zero status code returned while running MatMul node. Name:'MatMul_hidden' Status ` +
      `Message: /onnxruntime_src/onnxruntime/core/framework/bfc_arena.cc:376 void* ` +
      `onnxruntime::BFCArena::AllocateRawInternal(size_t, bool, onnxruntime::Stream*, bool, ` +
      `onnxruntime::WaitNotificationFn) Failed to allocate memory for requested buffer of size 2097152000`,
  },
  {
    name: 'ORT node arena limit',
    exitCode: 1,
    expect: 'oom:ort-arena-limit',
    stderr:
      `Error: Non-zero status code returned while running Cast node. Name:'graph_output_cast0' Status ` +
      `Message: /onnxruntime_src/onnxruntime/core/framework/bfc_arena.cc:359 void* ` +
      `onnxruntime::BFCArena::AllocateRawInternal(size_t, bool, onnxruntime::Stream*, bool, ` +
      `onnxruntime::WaitNotificationFn) Available memory of 34699008 is smaller than requested bytes of ` +
      `945041920\n    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)`,
  },
  {
    name: 'ORT CUDA EP cudaMalloc',
    exitCode: 1,
    expect: 'oom:cuda-error',
    stderr:
      `2026-11-30 02:10:11.000 [E:onnxruntime:Default, cuda_call.cc:123 CudaCall] CUDA failure 2: out of ` +
      `memory ; GPU=0 ; hostname=gpu-runner-2 ; ` +
      `file=/onnxruntime_src/onnxruntime/core/providers/cuda/cuda_allocator.cc ; line=47 ; ` +
      `expr=cudaMalloc((void**)&p, size);\nError: Non-zero status code returned while running FusedMatMul node.`,
  },
  {
    name: 'ORT CUDA EP cublasCreate',
    exitCode: 1,
    expect: 'oom:cublas-alloc',
    stderr:
      `Error: /onnxruntime_src/onnxruntime/core/providers/cuda/cuda_call.cc:129 onnxruntime::CudaCall ` +
      `CUBLAS failure 3: CUBLAS_STATUS_ALLOC_FAILED ; GPU=0 ; expr=cublasCreate(&cublas_handle_);`,
  },
  {
    name: 'ORT std::bad_alloc (C++ terminate)',
    exitCode: null,
    signal: 'SIGABRT',
    expect: 'oom:bad-alloc',
    stderr:
      `terminate called after throwing an instance of 'std::bad_alloc'\n  what():  std::bad_alloc\nAborted ` +
      `(core dumped)`,
  },
];
