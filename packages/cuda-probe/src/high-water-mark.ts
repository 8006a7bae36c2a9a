// A process's own peak resident memory (VmHWM, the kernel's high-water mark), and its reset, so that a phase
// that follows (a run after its tuning) is measured on its own. A child process's memory is never in it.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

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
 * (`residentAtResetBytes`), so a later peak is never below it: after a tuner that is the runtime it
 * loaded (which the run needs too) and what its released sessions left with the allocator (freed,
 * not returned to the system).
 */
export function resetHighWaterMark(procSelf = '/proc/self'): EarlierPeak {
  const peakBytes = highWaterMarkBytes(procSelf);
  try {
    writeFileSync(join(procSelf, 'clear_refs'), '5');
  } catch {
    return { peakBytes, reset: false, residentAtResetBytes: null };
  }
  // The kernel took the write, so the mark is now what is resident. It is not compared with the earlier peak:
  // a process at its peak that touches one more page between the two reads has a mark above it, reset all the same.
  const now = highWaterMarkBytes(procSelf);
  const reset = peakBytes !== null && now !== null;
  return { peakBytes, reset, residentAtResetBytes: reset ? now : null };
}

/** The process's VmHWM in bytes; null where /proc cannot be read. */
export function highWaterMarkBytes(procSelf = '/proc/self'): number | null {
  try {
    const m = /^VmHWM:\s+(\d+)\s+kB/m.exec(readFileSync(join(procSelf, 'status'), 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}
