// The peak memory of soup train's own process over a session, and where it happened. VmHWM (the
// kernel's high-water mark of resident memory) is read after every phase (setup, each step, each
// save and push, the validation pass): it only grows, so the phase in which it last grew holds
// the session's peak, exactly, with no sampling interval to miss a spike. It is resident memory
// of this process (page cache and a CUDA device's memory are not in it): the report says so.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** What the session's peak was, where, and against what. */
export interface SessionPeakReport {
  /** The process's peak resident memory (VmHWM), null where /proc cannot be read. */
  peak_bytes: number | null;
  /** The phase in which it was reached: `step 12`, `validation`, `save checkpoint-20`, `setup`. */
  peak_at: string | null;
  /** The step during (or right after) which it was reached; null for setup. */
  peak_step: number | null;
  budget_bytes: number | null;
  /** Where the budget comes from: training.memory_budget (soup train) or --budget (soup run), the memory reachable at the start, or the GPU's memory. */
  budget_source: 'memory_budget' | 'flag' | 'reachable' | 'device' | null;
  /** budget − peak (negative: over). */
  headroom_bytes: number | null;
  max_memory_bytes: number | null;
  /** The phase in which the peak first passed --max-memory, or null. */
  max_memory_passed_at: string | null;
  /** VmHWM: soup train's own process; tree-rss / cuda-per-process: soup run's trainer tree, sampled. */
  method: 'VmHWM' | 'tree-rss' | 'cuda-per-process' | 'unavailable';
  /**
   * soup train after its tuner timed steps in this process (`gradient_checkpointing: auto`, measured
   * now): the process's peak through tuning (VmHWM, null where unreadable), and whether the session
   * peak above includes it (false: the high-water mark was reset after tuning, so the session's
   * peak is the run's own), and the resident memory the mark was reset to (`resident_at_reset_bytes`:
   * the session peak is never below it; null where not reset). Absent when nothing was tuned in
   * this process.
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

/** Options of {@link SessionPeak}. */
export interface SessionPeakOptions {
  budgetBytes: number | null;
  budgetSource: 'memory_budget' | 'reachable' | null;
  /** Warn once when the peak passes this. */
  maxMemoryBytes: number | null;
  /** Where the warning goes (once). */
  warn: (line: string) => void;
  /** @default '/proc/self' */
  procSelf?: string;
  /** The tuner's phase before the session (resetHighWaterMark after it); null: nothing tuned in this process. */
  tuning?: EarlierPeak | null;
}

/** Tracks the session's peak phase by phase (see the file comment). */
export class SessionPeak {
  private peak: number | null = null;
  private at: string | null = null;
  private atStep: number | null = null;
  private passedAt: string | null = null;
  private readonly procSelf: string;

  constructor(private readonly o: SessionPeakOptions) {
    this.procSelf = o.procSelf ?? '/proc/self';
    this.mark('setup', null);
  }

  /** Reads the high-water mark after `phase`; a rise puts the session's peak in it. */
  mark(phase: string, step: number | null): void {
    const now = hwm(this.procSelf);
    if (now === null || (this.peak !== null && now <= this.peak)) return;
    this.peak = now;
    this.at = phase;
    this.atStep = step;
    const max = this.o.maxMemoryBytes;
    if (max !== null && now > max && this.passedAt === null) {
      this.passedAt = phase;
      this.o.warn(`memory: the peak passed --max-memory at ${phase}: ${now} bytes > ${max} bytes`);
    }
  }

  report(): SessionPeakReport {
    const { budgetBytes } = this.o;
    return {
      peak_bytes: this.peak,
      peak_at: this.at,
      peak_step: this.atStep,
      budget_bytes: budgetBytes,
      budget_source: this.o.budgetSource,
      headroom_bytes: budgetBytes !== null && this.peak !== null ? budgetBytes - this.peak : null,
      max_memory_bytes: this.o.maxMemoryBytes,
      max_memory_passed_at: this.passedAt,
      method: this.peak === null ? 'unavailable' : 'VmHWM',
      ...(this.o.tuning
        ? {
            tuning: {
              peak_bytes: this.o.tuning.peakBytes,
              in_session_peak: !this.o.tuning.reset,
              resident_at_reset_bytes: this.o.tuning.residentAtResetBytes,
            },
          }
        : {}),
    };
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
