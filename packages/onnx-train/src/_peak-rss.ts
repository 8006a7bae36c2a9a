// Peak resident memory of a stretch of work in this process (Linux /proc), for the budget tier.
//
// Preferred: write "5" to /proc/self/clear_refs (Linux ≥ 4.0), which resets VmHWM (the peak
// RSS) to the current RSS, run the work, read VmHWM. Exact: the kernel tracks the peak.
//
// Fallback, where the kernel refuses the reset (e.g. a sandbox that mounts /proc read-only):
// a worker thread reads VmRSS from /proc/self/status every `sampleMs` while the work runs (an
// ONNX Runtime step blocks the main thread, a worker keeps running). A sampled peak is a lower
// bound: a spike shorter than the interval can be missed.
//
// No /proc at all (macOS, Windows): `MemoryMeasurementError`.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { MemoryMeasurementError } from './errors';

/** How a peak was measured. */
export type PeakMethod = 'clear_refs' | 'sampled';

const KIB = 1024;

function statusField(text: string, field: 'VmRSS' | 'VmHWM'): number | null {
  const m = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm').exec(text);
  return m ? Number(m[1]) * KIB : null;
}

/** VmRSS and VmHWM of this process in bytes, or null when /proc/self/status cannot be read. */
export function readRss(procSelf = '/proc/self'): { rssBytes: number; hwmBytes: number } | null {
  try {
    const text = readFileSync(join(procSelf, 'status'), 'utf8');
    const rssBytes = statusField(text, 'VmRSS');
    const hwmBytes = statusField(text, 'VmHWM');
    return rssBytes === null || hwmBytes === null ? null : { rssBytes, hwmBytes };
  } catch {
    return null;
  }
}

/** Resets VmHWM to the current RSS; false when the kernel (or the sandbox) refuses. */
export function resetPeakRss(procSelf = '/proc/self'): boolean {
  try {
    writeFileSync(join(procSelf, 'clear_refs'), '5');
    return true;
  } catch {
    return false;
  }
}

/** Chooses the method once: `clear_refs` when the reset works, else `sampled`; throws without /proc. */
export function pickPeakMethod(preferred: PeakMethod | 'auto' = 'auto'): PeakMethod {
  if (readRss() === null) {
    throw new MemoryMeasurementError(
      "tier 'budget' measures peak memory from /proc/self/status (Linux only) and cannot on this platform; use a " +
        "fixed tier such as 'full' or 'medium'",
    );
  }
  if (preferred === 'sampled') return 'sampled';
  if (resetPeakRss()) return 'clear_refs';
  if (preferred === 'clear_refs') {
    throw new MemoryMeasurementError(
      "peakMethod 'clear_refs': writing to /proc/self/clear_refs was refused here; use peakMethod 'auto' (falls " +
        'back to sampling)',
    );
  }
  return 'sampled';
}

// The sampler runs as an eval'd worker (no file to resolve after bundling). Shared Int32 cells:
// [0] stop flag, [1] peak VmRSS in KiB, [2] samples taken.
const SAMPLER = `
const { workerData } = require('node:worker_threads');
const { readFileSync } = require('node:fs');
const cells = new Int32Array(workerData.buffer);
const sleep = new Int32Array(new SharedArrayBuffer(4));
while (Atomics.load(cells, 0) === 0) {
  try {
    const m = /^VmRSS:\\s+(\\d+)\\s+kB/m.exec(readFileSync('/proc/self/status', 'utf8'));
    if (m) { const kib = Number(m[1]); if (kib > Atomics.load(cells, 1)) Atomics.store(cells, 1, kib); }
  } catch {}
  Atomics.add(cells, 2, 1);
  Atomics.wait(sleep, 0, 0, workerData.sampleMs);
}
`;

/** What {@link measurePeak} saw. */
export interface PeakReading<T> {
  result: T;
  /** Highest RSS while `work` ran, in bytes. */
  peakRssBytes: number;
  method: PeakMethod;
}

/**
 * Runs `work` and returns the highest resident set size the process reached meanwhile.
 * `clear_refs`: exact (VmHWM after a reset). `sampled`: VmRSS read by a worker thread every
 * `sampleMs` (default 1 ms) — a lower bound.
 */
export async function measurePeak<T>(
  work: () => Promise<T>,
  method: PeakMethod,
  sampleMs = 1,
): Promise<PeakReading<T>> {
  if (method === 'clear_refs') {
    if (!resetPeakRss())
      throw new MemoryMeasurementError('writing to /proc/self/clear_refs was refused between two measurements');
    const result = await work();
    const after = readRss();
    if (after === null) throw new MemoryMeasurementError('/proc/self/status became unreadable during the measurement');
    return { result, peakRssBytes: after.hwmBytes, method };
  }
  const buffer = new SharedArrayBuffer(12);
  const cells = new Int32Array(buffer);
  const before = readRss();
  if (before !== null) cells[1] = Math.floor(before.rssBytes / KIB);
  const worker = new Worker(SAMPLER, { eval: true, workerData: { buffer, sampleMs } });
  try {
    await new Promise<void>((resolveOnline, reject) => {
      worker.once('online', resolveOnline);
      worker.once('error', reject);
    });
    // Wait for the first sample, so the work does not start before the sampler does.
    const deadline = Date.now() + 5000;
    while (Atomics.load(cells, 2) === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 1));
    const result = await work();
    const last = readRss();
    const peakKib = Math.max(Atomics.load(cells, 1), last === null ? 0 : Math.floor(last.rssBytes / KIB));
    return { result, peakRssBytes: peakKib * KIB, method };
  } finally {
    Atomics.store(cells, 0, 1);
    await worker.terminate();
  }
}
