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
   * CPU: what the hard cap of a trial's child is. `'address-space'`: RLIMIT_AS (see
   * `addressSpaceLimit`), a proxy that counts reserved address space, not memory. `'memory-cgroup'`:
   * each child runs in a fresh memory cgroup under this process's own (`runInMemoryCgroup`) whose
   * limit is the child's calibrated resident baseline + the batch's feeds + the budget; it counts
   * anonymous memory and page cache, as a GPU's memory counts every allocation, and a step above it
   * is killed by the OOM killer (`reason: 'killed'`, `memoryCgroup.oomKills` > 0). Where no cgroup
   * can be made the trial throws `MemoryCgroupUnavailableError` with the reason (no fallback).
   * The peak gate is unchanged. Ignored for CUDA.
   * @default 'address-space'
   */
  hardCap?: 'address-space' | 'memory-cgroup';
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
  hardCap: 'address-space' | 'memory-cgroup';
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
  if (o.signal !== undefined && !(o.signal instanceof AbortSignal))
    throw new ProbeOptionsError('signal must be an AbortSignal', { field: 'signal' });
  return {
    device,
    deviceId: optionalIntegerAtLeast('deviceId', o.deviceId, 0, 0),
    budgetBytes: optionalBytes('budgetBytes', o.budgetBytes),
    gpuMemLimitBytes: optionalBytes('gpuMemLimitBytes', o.gpuMemLimitBytes),
    timeoutMs: optionalIntegerAtLeast('timeoutMs', o.timeoutMs, 1, 600_000),
    addressSpaceLimit: oneOf(
      'addressSpaceLimit',
      o.addressSpaceLimit,
      ['auto', 'prlimit', 'ulimit', 'off'] as const,
      'auto',
    ),
    hardCap: oneOf('hardCap', o.hardCap, ['address-space', 'memory-cgroup'] as const, 'address-space'),
    env: o.env ?? process.env,
    cwd: o.cwd,
    signal: o.signal,
    nvidiaSmiPath: o.nvidiaSmiPath ?? 'nvidia-smi',
    nodePath: o.nodePath ?? process.execPath,
    workerPath: resolveWorkerPath(o.workerPath),
  };
}

/** The launch fields of a worker probe's config that follow from its resolved shared options. */
export function workerLaunch(r: ResolvedWorkerOptions): Omit<WorkerProbeConfig, 'what' | 'work' | 'threads'> {
  return {
    device: r.device,
    budgetBytes: r.budgetBytes,
    cuda:
      r.device === 'cuda'
        ? { deviceId: r.deviceId, nvidiaSmiPath: r.nvidiaSmiPath, gpuMemLimitBytes: r.gpuMemLimitBytes }
        : null,
    timeoutMs: r.timeoutMs,
    env: r.env,
    cwd: r.cwd,
    signal: r.signal,
    nodePath: r.nodePath,
    nodeArgs: [],
    workerPath: r.workerPath,
    addressSpaceLimit: r.addressSpaceLimit,
    hardCap: r.hardCap,
  };
}
