// Before `tuneExec` walks a row down to a smaller micro-batch, the two are timed again side by side. One estimate
// can move on a transient (a run the machine disturbed, a start-up swing): fresh runs of 1 and 1 + 2K steps, in the
// order m, smaller, smaller, m (a drift of the machine weighs on both), whose slopes alone must show the smaller m
// faster. The widest span two runs can have: the start-up is in both runs of a pair and cancels, and the slope's
// standard error is half that of runs K steps apart. The fresh runs confirm only; they stay out of the rows' estimates.
import { type Clock, pooledVariance, type RunsByRow, stepBy, type TimedRun } from './output-clock';

/** One fresh timing run (tuneExec's `time` for a row at its micro-batch). */
export type TimeRun = (
  steps: number,
) => Promise<{ ms: number; outputSpanMs?: number; peakBytes?: number } | { error: string }>;

/** One side of the comparison: its fresh runs, its accumulation at G. */
export interface WalkSide {
  time: TimeRun;
  accumulation: number;
}

export interface ConfirmWalkOptions {
  /** The row at its micro-batch m. */
  at: WalkSide;
  /** The same configuration at the next smaller divisor. */
  below: WalkSide;
  globalBatchSize: number;
  /** K: the runs are of 1 and 1 + 2K steps. */
  timeSteps: number;
  /** The clock the rows are timed by; the output's span only where every fresh run printed. */
  clock: Clock;
  /** Every row's runs so far: their pooled residual variance is the fresh slopes' noise. */
  runs: RunsByRow;
}

/**
 * `faster`: the smaller m is faster in the fresh runs too, beyond twice the standard error of the difference (under
 * the pooled noise), at least 5 %. `said`: those figures in samples/s (smaller m against m), or why there are none.
 * `belowPeakBytes`: the largest peak a fresh run at the smaller m reported (null: none did).
 */
export async function confirmWalk(
  o: ConfirmWalkOptions,
): Promise<{ faster: boolean; said: string; belowPeakBytes: number | null }> {
  const K = o.timeSteps;
  const again = new Map<WalkSide, Map<number, TimedRun>>([
    [o.at, new Map()],
    [o.below, new Map()],
  ]);
  let belowPeakBytes: number | null = null;
  for (const [side, steps] of [
    [o.at, 1],
    [o.below, 1],
    [o.below, 1 + 2 * K],
    [o.at, 1 + 2 * K],
  ] as const) {
    const t = await side.time(steps);
    if ('error' in t) return { faster: false, said: `a run failed: ${t.error}`, belowPeakBytes };
    if (side === o.below && t.peakBytes !== undefined) belowPeakBytes = Math.max(belowPeakBytes ?? 0, t.peakBytes);
    again.get(side)!.set(steps, { wallMs: t.ms, spanMs: t.outputSpanMs ?? null });
  }
  const spans = [...again.values()].every((pts) => [...pts.values()].every((p) => p.spanMs !== null));
  const by: Clock = o.clock === 'output' && spans ? 'output' : 'wall';
  const v = pooledVariance(o.runs, by);
  const a = stepBy(again.get(o.at)!, by, v);
  const b = stepBy(again.get(o.below)!, by, v);
  if (!(a.stepMs > 0 && b.stepMs > 0)) return { faster: false, said: 'a slope under the noise', belowPeakBytes };
  const G = o.globalBatchSize;
  const slow = G / ((o.at.accumulation * a.stepMs) / 1000);
  const fast = G / ((o.below.accumulation * b.stepMs) / 1000);
  const margin = Math.max(0.05, 2 * Math.hypot((a.seMs ?? 0) / a.stepMs, (b.seMs ?? 0) / b.stepMs));
  return { faster: fast > slow * (1 + margin), said: `${fast.toFixed(1)} against ${slow.toFixed(1)}`, belowPeakBytes };
}
