// A session's memory peak (SessionPeakReport) as the line a caller ends the session with.
import { formatBytes } from '@soup/batch-probe';
import type { BudgetSource, SessionPeakReport } from './session-result';

/** Where the budget came from, in the line's words (a record keyed by every source: a new one is a type error). */
const BUDGET_SOURCE: Record<BudgetSource, string> = {
  flag: '--budget',
  device: "the GPU's memory",
  reachable: 'reachable at the start',
  memory_budget: "soup.yaml's training.memory_budget",
};

/** The session summary's memory line: the peak, how it was read, the budget and its headroom, --max-memory. */
export function describeSessionPeak(r: SessionPeakReport | null): string {
  if (r === null || r.peak_bytes === null)
    return "memory: the trainer's peak is unknown (no reading of its process tree succeeded)";
  const what =
    r.method === 'cuda-per-process'
      ? "GPU memory of the trainer's processes, nvidia-smi"
      : "the trainer's whole process tree, sum of RSS, sampled";
  const source = r.budget_source === null ? 'unknown' : BUDGET_SOURCE[r.budget_source];
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

/** The peak line's tail when the tuner timed steps in the caller's own process: its peak, apart from the trainer's. */
export function describeTuningPeak(r: SessionPeakReport | null): string {
  const t = r?.tuning;
  if (t === undefined || t.peak_bytes === null) return '';
  return (
    `; before it, the tuner's timing sessions took soup's own process to ${formatBytes(t.peak_bytes)}` +
    ` (measured apart: the trainer is a process of its own)`
  );
}
