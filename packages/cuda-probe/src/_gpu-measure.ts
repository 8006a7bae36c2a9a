// How a CUDA trial is judged from nvidia-smi readings: per process when the driver lists the
// process with a figure, else by the device's used-memory delta across the trial (the probe
// owns the GPU while it runs), else not at all (exceptions only). Each verdict says which.
import type { GpuSnapshot } from './_nvidia-smi';

export interface GpuVerdictInput {
  /** Before the child loaded anything (device baseline). */
  start: GpuSnapshot | { why: string };
  /** Right before the step (model loaded). */
  pre: GpuSnapshot | { why: string };
  /** Right after the step. */
  post: GpuSnapshot | { why: string };
  /** Cap on the budget, bytes. */
  gpuMemLimitBytes: number | null;
}

export interface GpuVerdict {
  measurement: 'cuda-per-process' | 'cuda-device-delta' | 'exceptions-only';
  budgetBytes: number | null;
  peakBytes: number | null;
  /**
   * The device had (almost) nothing free after the step: under WDDM the allocator spills to host memory instead of
   * failing (#649).
   */
  deviceFull?: boolean;
  /** The measured GPU's free memory before the trial, when read. */
  freeBeforeBytes?: number;
  note?: string;
}

const MiB = 2 ** 20;

/** Free memory at or under this (1 % of what was free before the trial, at least 16 MiB) counts as a full device. */
export function fullThresholdBytes(freeBeforeBytes: number): number {
  return Math.max(16 * MiB, Math.floor(freeBeforeBytes * 0.01));
}

function cap(budget: number, limit: number | null): number {
  return limit === null ? budget : Math.min(limit, budget);
}

export function judgeGpu(input: GpuVerdictInput): GpuVerdict {
  const { start, pre, post } = input;
  const notes: string[] = [];
  if ('gpu' in pre && 'gpu' in post) {
    const p0 = pre.process;
    const p1 = post.process;
    if ('usedBytes' in p0 && 'usedBytes' in p1 && p1.listed && pre.gpu.freeBytes !== null) {
      return {
        measurement: 'cuda-per-process',
        budgetBytes: cap(pre.gpu.freeBytes + p0.usedBytes, input.gpuMemLimitBytes),
        peakBytes: p1.usedBytes,
      };
    }
    notes.push(
      'why' in p1
        ? `per-process memory unreadable: ${p1.why}`
        : 'why' in p0
          ? `per-process memory unreadable: ${p0.why}`
          : 'nvidia-smi does not list this process (another PID namespace, or WSL2)',
    );
  } else notes.push(`nvidia-smi cannot answer: ${'why' in pre ? pre.why : 'why' in post ? post.why : ''}`);
  if (
    'gpu' in start &&
    'gpu' in post &&
    start.gpu.uuid === post.gpu.uuid &&
    start.gpu.freeBytes !== null &&
    post.gpu.freeBytes !== null
  ) {
    const budgetBytes = cap(start.gpu.freeBytes, input.gpuMemLimitBytes);
    const peakBytes = Math.max(0, start.gpu.freeBytes - post.gpu.freeBytes);
    const deviceFull = post.gpu.freeBytes <= fullThresholdBytes(start.gpu.freeBytes);
    return {
      measurement: 'cuda-device-delta',
      budgetBytes,
      peakBytes,
      ...(deviceFull ? { deviceFull } : {}),
      note: `${notes.join('; ')}: judged by the device's used-memory delta`,
    };
  }
  if (!('gpu' in start)) notes.push(`no device reading before the trial: ${start.why}`);
  return { measurement: 'exceptions-only', budgetBytes: null, peakBytes: null, note: notes.join('; ') };
}
