// Whether a candidate is already past its best micro-batch: then a candidate that does more work at
// every micro-batch cannot win above it (tuneTrain does not even fit it).
import type { TuneRow } from './tune-cache';

/**
 * A candidate's rows past its best micro-batch: the largest m it timed (at most `top`, the largest
 * that fits) has fewer samples/s than the next smaller m it timed. The search assumes one best
 * micro-batch per candidate, slower on either side (it stops at the first slower m); by the same
 * assumption every m above is slower still per sample, and a candidate that does more work at
 * every micro-batch (full checkpointing, an offload) is slower than that, so it cannot win above.
 * Null when fewer than two were timed or the largest is not slower.
 */
export function pastItsBest(rows: readonly TuneRow[], top: number): { top: TuneRow; below: TuneRow } | null {
  const [atTop, below] = rows
    .filter((r) => r.microBatchSize !== null && r.samplesPerSecond !== null && r.microBatchSize <= top)
    .sort((a, b) => b.microBatchSize! - a.microBatchSize!);
  return atTop && below && atTop.samplesPerSecond! < below.samplesPerSecond! ? { top: atTop, below } : null;
}
