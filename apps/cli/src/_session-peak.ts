// The shape of a session's peak report (soup train and soup run: the supervisor samples the trainer's
// tree), --max-memory, and the tuner's own peak in soup's process (VmHWM, the kernel's high-water mark
// of resident memory), which the trainer, a process of its own, never counts.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { UsageError } from './errors';
import { parseBytes } from '@soup/config';

/** What the session's peak was, where, and against what. */
export interface SessionPeakReport {
  /** The process's peak resident memory (VmHWM), null where /proc cannot be read. */
  peak_bytes: number | null;
  /** The phase in which it was reached: `step 12`, `validation`, `save checkpoint-20`, `setup`. */
  peak_at: string | null;
  /** The step during (or right after) which it was reached; null for setup. */
  peak_step: number | null;
  budget_bytes: number | null;
  /**
   * Where the budget comes from: training.memory_budget (soup train) or --budget (soup run), the memory reachable at
   * the start, or the GPU's memory.
   */
  budget_source: 'memory_budget' | 'flag' | 'reachable' | 'device' | null;
  /** budget − peak (negative: over). */
  headroom_bytes: number | null;
  max_memory_bytes: number | null;
  /** The phase in which the peak first passed --max-memory, or null. */
  max_memory_passed_at: string | null;
  /** tree-rss / cuda-per-process: the trainer's tree, sampled by the supervisor (soup train's child, soup run's). */
  method: 'VmHWM' | 'tree-rss' | 'cuda-per-process' | 'unavailable';
  /**
   * soup train after its tuner timed steps in soup's own process (`gradient_checkpointing: auto`, measured
   * now): that process's peak through tuning (VmHWM, null where unreadable). The session's peak above is the
   * trainer child's, so it never includes it (`in_session_peak` false; `resident_at_reset_bytes` null, there
   * being no mark to reset). Absent when nothing was tuned in this session.
   */
  tuning?: { peak_bytes: number | null; in_session_peak: boolean; resident_at_reset_bytes: number | null };
}

/**
 * What resetHighWaterMark found: the peak so far, whether the kernel reset the mark, and the
 * resident memory the mark was reset to (null: not reset, or unreadable).
 */
export interface EarlierPeak {
  peakBytes: number | null;
  reset: boolean;
  residentAtResetBytes: number | null;
}

/**
 * The process's peak so far (VmHWM), then the mark reset to the resident memory now (Linux: `5`
 * written to /proc/self/clear_refs), so that what follows is measured on its own. `reset` is
 * false where the kernel did not take it (no such file, no permission): the mark still holds this
 * peak then, and a later report must say so. The reset mark starts from what is resident now
 * (`residentAtResetBytes`), so a later peak is never below it: after soup train's tuner that is
 * the runtime it loaded (which the run needs too) and what its released sessions left with the
 * allocator (freed, not returned to the system).
 */
export function resetHighWaterMark(procSelf = '/proc/self'): EarlierPeak {
  const peakBytes = hwm(procSelf);
  try {
    writeFileSync(join(procSelf, 'clear_refs'), '5');
  } catch {
    return { peakBytes, reset: false, residentAtResetBytes: null };
  }
  const now = hwm(procSelf);
  const reset = peakBytes !== null && now !== null && now <= peakBytes;
  return { peakBytes, reset, residentAtResetBytes: reset ? now : null };
}

function hwm(procSelf: string): number | null {
  try {
    const m = /^VmHWM:\s+(\d+)\s+kB/m.exec(readFileSync(join(procSelf, 'status'), 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** `--max-memory`: a size (`6GiB`) or a fraction of the budget (`0.9`, `90%`); null when not given. */
export function resolveMaxMemory(
  value: unknown,
  budgetBytes: number | null,
  parseBytes: (t: string) => number | undefined,
): number | null {
  if (value === undefined || value === null) return null;
  const text = String(value).trim();
  const pct = /^([0-9]+(?:\.[0-9]+)?)\s*%$/.exec(text);
  const fraction = pct ? Number(pct[1]) / 100 : /^0?\.[0-9]+$|^1(\.0+)?$/.test(text) ? Number(text) : undefined;
  if (fraction !== undefined) {
    if (budgetBytes === null) return null;
    return Math.floor(fraction * budgetBytes);
  }
  return parseBytes(text) ?? null;
}

/**
 * `--max-memory` in bytes, or null when not given; a fraction with no known budget is refused naming where a
 * budget comes from (`budgetHint`: the flag or the soup.yaml field).
 */
export function maxMemoryBytesOf(
  value: string | undefined,
  budgetBytes: number | null,
  budgetHint: string,
): number | null {
  const bytes = resolveMaxMemory(value, budgetBytes, parseBytes);
  if (value !== undefined && bytes === null) {
    throw new UsageError(
      `--max-memory ${value}: give a size like 6GiB, or a fraction like 0.9 or 90% of the budget (a ` +
        `fraction needs a known budget: ${budgetHint})`,
    );
  }
  return bytes;
}
