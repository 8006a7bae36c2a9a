// soup run's memory over the session: the trainer's whole process tree sampled by the supervisor
// (the reading is @soup/cuda-probe's: sum of RSS on the CPU, nvidia-smi per process on CUDA), the
// budget it is held to, --max-memory, and the summary line.
import { createTreeMemoryReader, deviceIdentity, reachableMemory } from '@soup/cuda-probe';
import type { MemoryWatchOptions, SessionMemory } from '@soup/supervisor';
import type { CommandContext } from './_context';
import { maxMemoryBytesOf, type SessionPeakReport } from './_session-peak';
import type { DeviceSpec } from './_parse';
import { formatBytes } from './format-bytes';

/** The watch the supervisor runs, and where its budget came from. */
export interface RunMemory {
  memory: MemoryWatchOptions;
  budgetSource: SessionPeakReport['budget_source'];
}

/** `--budget`, else (CPU) the memory reachable now, else (CUDA) the GPU's memory; `--max-memory` against it. */
export async function runMemory(
  opts: { device?: DeviceSpec; budget?: number; maxMemory?: string },
  ctx: CommandContext,
): Promise<RunMemory> {
  const kind = opts.device?.kind ?? 'cpu';
  const deviceId = opts.device?.id ?? 0;
  let budgetBytes = opts.budget ?? null;
  let budgetSource: SessionPeakReport['budget_source'] = budgetBytes !== null ? 'flag' : null;
  if (budgetBytes === null && kind === 'cpu') {
    try {
      budgetBytes = reachableMemory().bytes;
      budgetSource = 'reachable';
    } catch {
      budgetBytes = null;
    }
  } else if (budgetBytes === null) {
    const id = await deviceIdentity({ device: kind, deviceId, env: ctx.env }).catch(() => null);
    if (id && id.device === 'cuda') {
      budgetBytes = id.gpuMemoryGb * 2 ** 30;
      budgetSource = 'device';
    }
  }
  const maxMemoryBytes = maxMemoryBytesOf(opts.maxMemory, budgetBytes, 'pass --budget');
  const reader = createTreeMemoryReader({ device: kind, deviceId, env: ctx.env });
  return {
    memory: { read: (pid) => reader.read(pid), method: reader.method, budgetBytes, maxMemoryBytes, formatBytes },
    budgetSource,
  };
}

const at = (step: number | null): string => (step === null ? 'before the first reported step' : `step ${step}`);

/** RUN_JSON's `memory` from the supervisor's report. */
export function memoryResult(
  m: SessionMemory | null,
  budgetSource: SessionPeakReport['budget_source'],
): SessionPeakReport | null {
  if (m === null) return null;
  return {
    peak_bytes: m.peak_bytes,
    peak_at: m.peak_bytes === null ? null : at(m.peak_step),
    peak_step: m.peak_step,
    budget_bytes: m.budget_bytes,
    budget_source: m.budget_bytes === null ? null : budgetSource,
    headroom_bytes: m.headroom_bytes,
    max_memory_bytes: m.max_memory_bytes,
    max_memory_passed_at: m.max_memory_passed ? at(m.max_memory_passed_step) : null,
    method: m.peak_bytes === null ? 'unavailable' : (m.method as SessionPeakReport['method']),
  };
}

/** The session summary's memory line. */
export function describeRunPeak(r: SessionPeakReport | null): string {
  if (r === null || r.peak_bytes === null)
    return "memory: the trainer's peak is unknown (no reading of its process tree succeeded)";
  const what =
    r.method === 'cuda-per-process'
      ? "GPU memory of the trainer's processes, nvidia-smi"
      : "the trainer's whole process tree, sum of RSS, sampled";
  const source =
    r.budget_source === 'flag'
      ? '--budget'
      : r.budget_source === 'device'
        ? "the GPU's memory"
        : 'reachable at the start';
  const budget =
    r.budget_bytes === null
      ? 'budget unknown'
      : `budget ${formatBytes(r.budget_bytes)} (${source}), headroom ${formatBytes(r.headroom_bytes)}`;
  const max =
    r.max_memory_bytes === null
      ? ''
      : r.max_memory_passed_at
        ? `; passed --max-memory ${formatBytes(r.max_memory_bytes)} at ${r.max_memory_passed_at}`
        : `; under --max-memory ${formatBytes(r.max_memory_bytes)}`;
  return `memory: session peak ${formatBytes(r.peak_bytes)} (${what}) at ${r.peak_at}; ${budget}${max}`;
}
