// A trainer that ignores its batch size (the flag it was given is not the one it reads, or
// {micro_batch_size} is not in the command) holds the same memory at every size: every trial fits,
// and the search answers its ceiling. Its peak does not grow with the batch, which a real step's
// always does (activations per sample), so fits whose measured peaks stay flat over a batch at
// least eight times larger are the sign (eight, not two: a framework's peak can be flat over its
// smallest sizes, where the allocator's chunks hide a few samples' activations). The answer then
// rests on nothing: the caller says so.
import { formatBytes } from './format-bytes';

/** Peaks within this fraction of each other are the same (the probe's own resolution is about 1 %). */
export const FLAT_PEAK_FRACTION = 0.02;

/** What {@link flatPeak} found: the smallest and largest fits with a peak, and the warning to show. */
export interface FlatPeak {
  fromBatch: number;
  toBatch: number;
  fromPeakBytes: number;
  toPeakBytes: number;
  warning: string;
}

/** A trial as {@link flatPeak} reads it (a `TrialRecord` is one). */
export interface FlatPeakTrial {
  batchSize: number;
  fits: boolean;
  peakBytes?: number | undefined;
}

/**
 * Whether the fits' measured peaks stayed flat as the batch grew: the largest fit with a peak at
 * least 8× the smallest's batch, and its peak no more than {@link FLAT_PEAK_FRACTION} above it.
 * Null when they grew, or fewer than two fits measured a peak. `name` names the size in the warning.
 */
export function flatPeak(trials: readonly FlatPeakTrial[], name = 'batch size'): FlatPeak | null {
  const fits = trials
    .filter((t) => t.fits && typeof t.peakBytes === 'number' && t.peakBytes > 0)
    .sort((a, b) => a.batchSize - b.batchSize);
  if (fits.length < 2) return null;
  const lo = fits[0]!;
  const hi = fits.at(-1)!;
  if (hi.batchSize < 8 * lo.batchSize || hi.peakBytes! > lo.peakBytes! * (1 + FLAT_PEAK_FRACTION)) return null;
  return {
    fromBatch: lo.batchSize,
    toBatch: hi.batchSize,
    fromPeakBytes: lo.peakBytes!,
    toPeakBytes: hi.peakBytes!,
    warning:
      `the peak stayed flat from ${name} ${lo.batchSize} (${formatBytes(lo.peakBytes!)}) to ${hi.batchSize} ` +
      `(${formatBytes(hi.peakBytes!)}): does the trainer read the ${name} soup gives it? An answer that does ` +
      'not change its memory says nothing about what fits',
  };
}
