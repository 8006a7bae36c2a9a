// Real error texts as trainers print them (stderr of the failed process), each with the verdict
// soup must reach. Shapes follow each framework's own output: PyTorch CUDA 1.x/2.x, HIP, MPS,
// CPU; ONNX Runtime (arena, CUDA EP); TensorFlow; XLA/JAX; DeepSpeed; bitsandbytes; Python
// MemoryError; a shell's "Killed"; and crashes that are not out of memory.
import { type CorpusCase, TB, frames } from './corpus-case';
import { RUNTIME_CASES } from './error-corpus-runtimes';

export type { CorpusCase } from './corpus-case';

export const CORPUS: CorpusCase[] = [
  ...RUNTIME_CASES,
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
