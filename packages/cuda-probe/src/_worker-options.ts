// Options every worker probe (ORT, train-step) shares, and their checks.
import { oneOf, optionalBytes, optionalIntegerAtLeast } from './_validate';
import { resolveWorkerPath } from './_worker-path';
import type { WorkerProbeConfig } from './_worker-probe';
import { ProbeOptionsError } from './errors';

/** Options shared by the probes that run the package's worker in a child. */
export interface WorkerProbeOptions {
  /**
   * `cpu`: the step runs on onnxruntime's CPU provider, budget and peak are host memory.
   * `cuda`: the CUDA provider, budget and peak are device memory read with nvidia-smi.
   * @default 'cpu'
   */
  device?: 'cpu' | 'cuda';
  /**
   * GPU index for `cuda`.
   * @default 0
   */
  deviceId?: number;
  /**
   * The memory one step may use, in bytes. CPU: the growth of resident memory during the step
   * (VmHWM minus VmRSS before it). CUDA: ignored — the budget is free + held before the step.
   * @default CPU: reachable memory right before the step (cgroup limit minus usage, else MemAvailable)
   */
  budgetBytes?: number;
  /**
   * CUDA only: caps the budget (the `gpu_mem_limit` the trainer will run with). onnxruntime-node
   * 1.30 does not forward it to the CUDA provider, so it is a gate, not an arena cap.
   * @default none
   */
  gpuMemLimitBytes?: number;
  /**
   * Kill a trial's child (SIGKILL, whole process group) after this long; the trial throws
   * `ProbeTimeoutError`.
   * @default 600000
   */
  timeoutMs?: number;
  /**
   * CPU: how the child's RLIMIT_AS is applied. `auto` uses prlimit (util-linux) and falls back to
   * `sh -c 'ulimit -v …; exec "$@"'` (the shell parses only that fixed script); `off` runs the
   * child without a limit (the peak gate still decides). Ignored for CUDA, whose driver reserves
   * more address space than any useful limit.
   * @default 'auto'
   */
  addressSpaceLimit?: 'auto' | 'prlimit' | 'ulimit' | 'off';
  /**
   * Environment of the child.
   * @default process.env
   */
  env?: NodeJS.ProcessEnv;
  /** Working directory of the child. @default process.cwd() */
  cwd?: string;
  /** Aborts the running trial (its child is killed) and every later one. */
  signal?: AbortSignal;
  /**
   * The nvidia-smi executable (CUDA budget and peak).
   * @default 'nvidia-smi'
   */
  nvidiaSmiPath?: string;
  /**
   * The Node.js binary that runs the worker.
   * @default process.execPath
   */
  nodePath?: string;
  /**
   * The worker script.
   * @default dist/worker.js of this package
   */
  workerPath?: string;
}

export interface ResolvedWorkerOptions {
  device: 'cpu' | 'cuda';
  deviceId: number;
  budgetBytes: number | null;
  gpuMemLimitBytes: number | null;
  timeoutMs: number;
  addressSpaceLimit: 'auto' | 'prlimit' | 'ulimit' | 'off';
  env: NodeJS.ProcessEnv;
  cwd: string | undefined;
  signal: AbortSignal | undefined;
  nvidiaSmiPath: string;
  nodePath: string;
  workerPath: string;
}

/** Checks the options every worker probe shares; throws ProbeOptionsError naming the field. */
export function resolveWorkerOptions(o: WorkerProbeOptions): ResolvedWorkerOptions {
  const device = oneOf('device', o.device, ['cpu', 'cuda'] as const, 'cpu');
  if (o.signal !== undefined && !(o.signal instanceof AbortSignal)) throw new ProbeOptionsError('signal', 'signal must be an AbortSignal');
  return {
    device,
    deviceId: optionalIntegerAtLeast('deviceId', o.deviceId, 0, 0),
    budgetBytes: optionalBytes('budgetBytes', o.budgetBytes),
    gpuMemLimitBytes: optionalBytes('gpuMemLimitBytes', o.gpuMemLimitBytes),
    timeoutMs: optionalIntegerAtLeast('timeoutMs', o.timeoutMs, 1, 600_000),
    addressSpaceLimit: oneOf('addressSpaceLimit', o.addressSpaceLimit, ['auto', 'prlimit', 'ulimit', 'off'] as const, 'auto'),
    env: o.env ?? process.env,
    cwd: o.cwd,
    signal: o.signal,
    nvidiaSmiPath: o.nvidiaSmiPath ?? 'nvidia-smi',
    nodePath: o.nodePath ?? process.execPath,
    workerPath: resolveWorkerPath(o.workerPath),
  };
}


/** The launch fields of a worker probe's config that follow from its resolved shared options. */
export function workerLaunch(
  r: ResolvedWorkerOptions,
): Omit<WorkerProbeConfig, 'what' | 'work' | 'threads'> {
  return {
    device: r.device,
    budgetBytes: r.budgetBytes,
    cuda: r.device === 'cuda' ? { deviceId: r.deviceId, nvidiaSmiPath: r.nvidiaSmiPath, gpuMemLimitBytes: r.gpuMemLimitBytes } : null,
    timeoutMs: r.timeoutMs,
    env: r.env,
    cwd: r.cwd,
    signal: r.signal,
    nodePath: r.nodePath,
    nodeArgs: [],
    workerPath: r.workerPath,
    addressSpaceLimit: r.addressSpaceLimit,
  };
}
