// The divisors of a global batch: the only micro-batch sizes that keep it whole (m × a = G).
// Pure helpers shared by the micro-batch probe, `soup train` and the `soup run` supervisor.
import { InvalidBatchOptionError } from './errors';
import { positiveInt } from './_validate';

/** The divisors of `n`, ascending (`divisorsOf(24)` → 1, 2, 3, 4, 6, 8, 12, 24). */
export function divisorsOf(n: number): number[] {
  positiveInt('n', n);
  const low: number[] = [];
  const high: number[] = [];
  for (let d = 1; d * d <= n; d++) {
    if (n % d !== 0) continue;
    low.push(d);
    if (d * d !== n) high.push(n / d);
  }
  return [...low, ...high.reverse()];
}

/**
 * The samples per rank and optimizer step, G / worldSize.
 * @throws {InvalidBatchOptionError} G not a multiple of worldSize (field `globalBatchSize`)
 */
export function perRankBatch(globalBatchSize: number, worldSize = 1): number {
  positiveInt('globalBatchSize', globalBatchSize);
  positiveInt('worldSize', worldSize);
  if (globalBatchSize % worldSize !== 0) {
    throw new InvalidBatchOptionError(
      `globalBatchSize ${globalBatchSize} is not a multiple of worldSize ${worldSize}: pick a global batch that ` +
        `every rank shares equally`,
      { field: 'globalBatchSize' },
    );
  }
  return globalBatchSize / worldSize;
}

/** The largest divisor of `n` that is ≤ `cap`, or null when `cap` < 1. */
export function largestDivisorAtMost(n: number, cap: number): number | null {
  let best: number | null = null;
  for (const d of divisorsOf(n)) if (d <= cap) best = d;
  return best;
}

/**
 * The micro-batch to step down to after an out-of-memory error at `microBatchSize`: the next
 * smaller divisor of G / worldSize (the accumulation grows), or null when m is already 1.
 */
export function nextMicroBatchSize(o: {
  globalBatchSize: number;
  microBatchSize: number;
  worldSize?: number;
}): number | null {
  const perRank = perRankBatch(o.globalBatchSize, o.worldSize ?? 1);
  positiveInt('microBatchSize', o.microBatchSize);
  return largestDivisorAtMost(perRank, o.microBatchSize - 1);
}

/** The three numbers in one line: `4 × 4 = 16`, or `4 × 4 × 2 ranks = 32` with a world size. */
export function formatMicroBatch(o: { microBatchSize: number; accumulation: number; worldSize?: number }): string {
  const n = o.worldSize ?? 1;
  const g = o.microBatchSize * o.accumulation * n;
  return n === 1
    ? `${o.microBatchSize} × ${o.accumulation} = ${g}`
    : `${o.microBatchSize} × ${o.accumulation} × ${n} ranks = ${g}`;
}
