// Reads of /proc used by the parent and the worker. Linux only; every reader returns null
// (never throws) when the file is missing, so callers can say "could not measure".
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface ProcStatus {
  /** Peak virtual size (VmPeak). */
  vmPeakBytes: number;
  /** Current virtual size (VmSize): what RLIMIT_AS counts. */
  vmSizeBytes: number;
  /** Peak resident set size (VmHWM). */
  vmHwmBytes: number;
  /** Current resident set size (VmRSS). */
  vmRssBytes: number;
}

function kib(text: string, field: string): number | null {
  const m = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm').exec(text);
  return m ? Number(m[1]) * 1024 : null;
}

/** Parses the Vm* lines of a `/proc/<pid>/status` text. */
export function parseProcStatus(text: string): ProcStatus | null {
  const vmPeakBytes = kib(text, 'VmPeak');
  const vmSizeBytes = kib(text, 'VmSize');
  const vmHwmBytes = kib(text, 'VmHWM');
  const vmRssBytes = kib(text, 'VmRSS');
  if (vmPeakBytes === null || vmSizeBytes === null || vmHwmBytes === null || vmRssBytes === null) return null;
  return { vmPeakBytes, vmSizeBytes, vmHwmBytes, vmRssBytes };
}

/** `/proc/<pid>/status` of a process (`self` by default), or null when it cannot be read. */
export function readProcStatus(pid: number | 'self' = 'self', procRoot = '/proc'): ProcStatus | null {
  try {
    return parseProcStatus(readFileSync(join(procRoot, String(pid), 'status'), 'utf8'));
  } catch {
    return null;
  }
}

/**
 * Resets this process's peak RSS (VmHWM) to its current RSS by writing `5` to
 * `/proc/self/clear_refs` (Linux >= 4.0). Returns false when the kernel refused.
 */
export function resetPeakRss(procRoot = '/proc'): boolean {
  try {
    writeFileSync(join(procRoot, 'self', 'clear_refs'), '5');
    return true;
  } catch {
    return false;
  }
}

/** `MemTotal` and `MemAvailable` of `/proc/meminfo`, in bytes (null when unreadable). */
export function readMeminfo(procRoot = '/proc'): { totalBytes: number; availableBytes: number | null } | null {
  try {
    const text = readFileSync(join(procRoot, 'meminfo'), 'utf8');
    const totalBytes = kib(text, 'MemTotal');
    if (totalBytes === null) return null;
    return { totalBytes, availableBytes: kib(text, 'MemAvailable') };
  } catch {
    return null;
  }
}
