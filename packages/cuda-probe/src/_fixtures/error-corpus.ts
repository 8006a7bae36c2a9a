// Real error texts as trainers print them (stderr of the failed process), each with the verdict
// soup must reach. Shapes follow each framework's own output: PyTorch CUDA 1.x/2.x, HIP, MPS,
// CPU; ONNX Runtime (arena, CUDA EP); TensorFlow; XLA/JAX; DeepSpeed; bitsandbytes; Python
// MemoryError; a shell's "Killed"; and crashes that are not out of memory.
export interface CorpusCase {
  name: string;
  stderr: string;
  stdout?: string;
  exitCode: number | null;
  signal?: NodeJS.Signals;
  /** `oom:<kind>`, `killed`, or `error` / `error:<excluded kind>` (a ProbeChildError). */
  expect: string;
}

const TB = 'Traceback (most recent call last):';
const frames = (file = 'train.py') =>
  `  File "/srv/${file}", line 88, in <module>\n    main()\n  File "/srv/${file}", line 70, in main\n    ` +
  `loss.backward()`;

export const CORPUS: CorpusCase[] = [
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
  // --- TensorFlow / XLA / JAX ---
  {
    name: 'TF ResourceExhaustedError',
    exitCode: 1,
    expect: 'oom:tensorflow',
    stderr:
      `2026-11-30 01:00:00.000000: W tensorflow/core/common_runtime/bfc_allocator.cc:479] Allocator ` +
      `(GPU_0_bfc) ran out of memory trying to allocate 2.00GiB (rounded to 2147483648)requested by op Conv2D\n` +
      `${TB}\n  File "/srv/train_tf.py", line 40, in <module>\n    ` +
      `model.fit(ds)\ntensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor ` +
      `with shape[32,512,512,64] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator ` +
      `GPU_0_bfc [Op:Conv2D]`,
  },
  {
    name: 'TF graph-mode Resource exhausted',
    exitCode: 1,
    expect: 'oom:tensorflow',
    stderr:
      `${TB}\n  File "/srv/train_tf.py", line 40, in <module>\n    ` +
      `model.fit(ds)\ntensorflow.python.framework.errors_impl.ResourceExhaustedError: Graph execution ` +
      `error:\n\nOOM when allocating tensor with shape[64,1024,4096] and type float`,
  },
  {
    name: 'JAX XlaRuntimeError RESOURCE_EXHAUSTED',
    exitCode: 1,
    expect: 'oom:xla',
    stderr:
      `${TB}\n  File "/srv/train_jax.py", line 51, in <module>\n    state, loss = step(state, ` +
      `batch)\njaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate ` +
      `17179869184 bytes.\n--------------------\nFor simplicity, JAX has removed its internal frames from the ` +
      `traceback of the following exception. Set JAX_TRACEBACK_FILTERING=off to include these.`,
  },
  {
    name: 'JAX 0.4.30 JaxRuntimeError',
    exitCode: 1,
    expect: 'oom:xla',
    stderr:
      `${TB}\n  File "/srv/train_jax.py", line 51, in <module>\n    state, loss = step(state, ` +
      `batch)\njax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Error allocating device buffer: Attempting to ` +
      `allocate 4.00G. That was not possible. There are 1.20G free.`,
  },
  {
    name: 'XLA TPU HBM exhausted',
    exitCode: 1,
    expect: 'oom:xla',
    stderr:
      `${TB}\n  File "/srv/train_jax.py", line 51, in <module>\n    out = ` +
      `f(x)\njaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of ` +
      `memory in memory space hbm. Used 17.33G of 15.48G hbm. Exceeded hbm capacity by 1.85G.`,
  },
  // --- DeepSpeed / bitsandbytes ---
  {
    name: 'DeepSpeed ZeRO-3 OOM under the deepspeed launcher',
    exitCode: 1,
    expect: 'oom:pytorch-cuda',
    stderr:
      `[2026-11-30 01:00:00,000] [INFO] [launch.py:146:main] WORLD INFO DICT: {'localhost': [0]}\n[rank0]: ` +
      `${TB}\n[rank0]:   File "/srv/ds_train.py", line 60, in <module>\n[rank0]:     ` +
      `engine.backward(loss)\n[rank0]:   File "/usr/lib/python3/site-packages/deepspeed/runtime/zero/stage3.py", ` +
      `line 2213, in backward\n[rank0]:     self.loss_scaler.backward(loss.float(), ` +
      `retain_graph=retain_graph)\n[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 ` +
      `GiB. GPU 0 has a total capacity of 39.39 GiB of which 2.06 GiB is free.\n[2026-11-30 01:00:09,000] [INFO] ` +
      `[launch.py:316:sigkill_handler] Killing subprocess 4321\n[2026-11-30 01:00:09,000] [ERROR] ` +
      `[launch.py:322:sigkill_handler] ['/usr/bin/python3', '-u', 'ds_train.py'] exits with return code = 1`,
  },
  {
    name: 'DeepSpeed offload pinned host alloc',
    exitCode: 1,
    expect: 'oom:cuda-error',
    stderr:
      `${TB}\n  File "/usr/lib/python3/site-packages/deepspeed/runtime/zero/stage_1_and_2.py", line 512, in ` +
      `__init__\n    self.single_partition_of_fp32_groups.append(weights_partition.pin_memory())\nRuntimeError: ` +
      `CUDA error: out of memory`,
  },
  {
    name: 'bitsandbytes 8-bit optimizer state OOM',
    exitCode: 1,
    expect: 'oom:pytorch-cuda',
    stderr:
      `${TB}\n  File "/usr/lib/python3/site-packages/bitsandbytes/optim/optimizer.py", line 287, in ` +
      `step\n    self.init_state(group, p, gindex, pindex)\n  File ` +
      `"/usr/lib/python3/site-packages/bitsandbytes/functional.py", line 469, in get_paged\n    cuda_ptr = ` +
      `lib.cget_managed_ptr(ct.c_size_t(num_bytes))\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate ` +
      `1.95 GiB.`,
  },
  {
    name: 'bitsandbytes 4-bit quantize MemoryError-free cudaMalloc failure',
    exitCode: 1,
    expect: 'oom:generic',
    stderr:
      `${TB}\n  File "/usr/lib/python3/site-packages/bitsandbytes/functional.py", line 1234, in ` +
      `quantize_4bit\n    out = torch.zeros(((n + 1) // 2, 1), dtype=quant_storage, ` +
      `device=A.device)\nRuntimeError: Error: cudaMalloc failed: out-of-memory while quantizing weight`,
  },
  // --- Python / OS ---
  {
    name: 'Python MemoryError (bare)',
    exitCode: 1,
    expect: 'oom:python-memory-error',
    stderr: `${TB}\n  File "/srv/prep.py", line 9, in <module>\n    buf = bytearray(1 << 40)\nMemoryError`,
  },
  {
    name: 'numpy _ArrayMemoryError',
    exitCode: 1,
    expect: 'oom:python-memory-error',
    stderr:
      `${TB}\n  File "/srv/prep.py", line 9, in <module>\n    x = np.zeros((1_000_000, ` +
      `100_000))\nnumpy.core._exceptions._ArrayMemoryError: Unable to allocate 745. GiB for an array with shape ` +
      `(1000000, 100000) and data type float64`,
  },
  {
    name: 'ENOMEM from fork / mmap',
    exitCode: 1,
    expect: 'oom:enomem',
    stderr:
      `${TB}\n  File "/usr/lib/python3.11/multiprocessing/popen_fork.py", line 66, in _launch\n    self.pid ` +
      `= os.fork()\nOSError: [Errno 12] Cannot allocate memory`,
  },
  {
    name: 'bash wrapper "Killed", exit 137',
    exitCode: 137,
    expect: 'killed',
    stderr:
      `epoch 0 step 0 loading shards 100%\n/srv/run.sh: line 3:  4242 Killed                  python ` +
      `train.py --bs 64`,
  },
  { name: 'SIGKILL by the OOM killer (no output)', exitCode: null, signal: 'SIGKILL', expect: 'killed', stderr: '' },
  {
    name: 'Node heap OOM',
    exitCode: null,
    signal: 'SIGABRT',
    expect: 'oom:node-heap',
    stderr:
      `<--- Last few GCs --->\n\n[10787:0x1c29be20]       18 ms: Mark-Compact (reduce) 2.6 (5.0) -> 2.6 ` +
      `(4.0) MB\n\n<--- JS stacktrace --->\n\nFATAL ERROR: Committing semi space failed. Allocation failed - ` +
      `JavaScript heap out of memory\n----- Native stack trace -----`,
  },
  {
    name: 'hyphenated "out-of-memory" from a custom trainer (no traceback)',
    exitCode: 1,
    expect: 'oom:generic',
    stderr: 'step 0 starting\nfatal: device out-of-memory at step 0',
  },
  // --- Not out of memory ---
  {
    name: 'KeyError after a hint that mentions running out of memory',
    exitCode: 1,
    expect: 'error',
    stderr:
      `hint: lower the batch if you run out of memory\nloading dataset...\n${TB}\n  File "/srv/train.py", ` +
      `line 33, in <module>\n    col = row["text"]\nKeyError: 'text'`,
  },
  {
    name: 'hint logged on stdout, ValueError raised',
    exitCode: 1,
    expect: 'error',
    stdout: 'If you see CUDA out of memory, reduce --bs.\nstep 0',
    stderr:
      `${TB}\n  File "/srv/train.py", line 40, in <module>\n    raise ValueError("bad config")\nValueError: ` +
      `bad config`,
  },
  {
    name: 'illegal memory access (not OOM) with an allocator line',
    exitCode: 1,
    expect: 'error:illegal-address',
    stderr:
      `${TB}\n${frames()}\nRuntimeError: CUDA error: an illegal memory access was encountered\nCUDA kernel ` +
      `errors might be asynchronously reported at some other API call, so the stacktrace below might be ` +
      `incorrect.\nCUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate(handle)`,
  },
  {
    name: 'device-side assert',
    exitCode: 1,
    expect: 'error:device-assert',
    stderr:
      `../aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [0,0,0], thread: [0,0,0] ` +
      `Assertion failed.\n${TB}\n${frames()}\nRuntimeError: CUDA error: device-side assert triggered`,
  },
  {
    name: 'NCCL watchdog timeout',
    exitCode: 1,
    expect: 'error:nccl',
    stderr:
      `[rank1]:[E1130 01:00:00.000000000 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective ` +
      `operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for ` +
      `600007 milliseconds before timing out.\n[rank1]: ${TB}\n[rank1]:   File "/srv/train.py", line 70, in ` +
      `main\n[rank1]:     dist.all_reduce(t)\n[rank1]: torch.distributed.DistBackendError: NCCL communicator was ` +
      `aborted on rank 1.`,
  },
  {
    name: 'NCCL unhandled cuda error quoting "out of memory"',
    exitCode: 1,
    expect: 'error:nccl',
    stderr:
      `${TB}\n  File "/srv/train.py", line 12, in <module>\n    ` +
      `dist.barrier()\ntorch.distributed.DistBackendError: NCCL error in: ` +
      `../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, unhandled cuda error (run with NCCL_DEBUG=INFO for ` +
      `details), NCCL version 2.20.5\nncclUnhandledCudaError: Call to CUDA function failed.\nLast error:\nCuda ` +
      `failure 'out of memory'`,
  },
  {
    name: 'NCCL system error',
    exitCode: 1,
    expect: 'error:nccl',
    stderr:
      `${TB}\n  File "/srv/train.py", line 12, in <module>\n    ` +
      `dist.init_process_group("nccl")\ntorch.distributed.DistBackendError: NCCL error in: ` +
      `ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details)\nncclSystemError: ` +
      `System call (e.g. socket, malloc) or external library call failed or device error.`,
  },
  {
    name: 'one rank OOM, the other rank NCCL abort: OOM wins',
    exitCode: 1,
    expect: 'oom:pytorch-cuda',
    stderr:
      `[rank0]: ${TB}\n[rank0]:   File "/srv/train.py", line 70, in main\n[rank0]: torch.OutOfMemoryError: ` +
      `CUDA out of memory. Tried to allocate 4.00 GiB.\n[rank1]: ${TB}\n[rank1]:   File "/srv/train.py", line 71, ` +
      `in main\n[rank1]: torch.distributed.DistBackendError: NCCL communicator was aborted on rank 1.`,
  },
  {
    name: 'gRPC RESOURCE_EXHAUSTED quota',
    exitCode: 1,
    expect: 'error',
    stderr:
      `${TB}\n  File "/srv/upload.py", line 5, in <module>\n    ` +
      `stub.Put(req)\ngrpc._channel._InactiveRpcError: <_InactiveRpcError of RPC that terminated with:\n\tstatus = ` +
      `StatusCode.RESOURCE_EXHAUSTED\n\tdetails = "Quota exceeded for quota metric 'Write requests' and limit ` +
      `'Write requests per minute'"`,
  },
  {
    name: 'ValueError shape mismatch',
    exitCode: 1,
    expect: 'error',
    stderr: `${TB}\n${frames()}\nValueError: Expected input batch_size (8) to match target batch_size (16).`,
  },
  {
    name: 'ORT reshape error (node)',
    exitCode: 1,
    expect: 'error',
    stderr:
      `Error: Non-zero status code returned while running Reshape node. Name:'/Reshape' Status Message: The ` +
      `input tensor cannot be reshaped to the requested shape.\n    at Immediate.<anonymous> ` +
      `(/srv/node_modules/onnxruntime-node/dist/backend.js:92:30)`,
  },
  {
    name: 'ImportError',
    exitCode: 1,
    expect: 'error',
    stderr:
      `${TB}\n  File "/srv/train.py", line 1, in <module>\n    import flash_attn\nModuleNotFoundError: No ` +
      `module named 'flash_attn'`,
  },
  {
    name: 'plain exit 3 with a memory hint in its last log lines',
    exitCode: 3,
    expect: 'error',
    stderr: 'tip: set PYTORCH_CUDA_ALLOC_CONF if you run out of memory\nerror: dataset path /data/x does not exist',
  },
];
