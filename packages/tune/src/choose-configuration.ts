// Which configuration trains fastest at a fixed global batch: samples per second at G from each
// candidate's measured step time at its own micro-batch, and the choice, with the reason. Pure:
// the measuring is the caller's (soup probe --exec --try times the trainer's own runs).

/** One candidate as measured. */
export interface MeasuredCandidate {
  /** `grad_ckpt=true, …`: how the table names it. */
  label: string;
  /** Micro-batch m that fits (null: none fits). */
  microBatchSize: number | null;
  /** a = G / (m × world size) (null with m). */
  accumulation: number | null;
  /** Peak memory measured at m (null: not measured, e.g. an answer from the cache). */
  peakBytes: number | null;
  /** Time of one micro-step at m in ms (null: not timed). */
  stepMs: number | null;
  /** The step time's standard error in ms (the measurement's own noise; null: not estimated). */
  noiseMs: number | null;
}

export interface CandidateSpeed {
  label: string;
  /** G / (a × step time): samples per second at the global batch; null where not timed. */
  samplesPerSecond: number | null;
  /** One standard error of `samplesPerSecond` (from `noiseMs`). */
  noise: number | null;
}

export interface ConfigurationChoice {
  /** Index of the chosen candidate; null when none was timed. */
  chosen: number | null;
  speeds: CandidateSpeed[];
  /** The runner-up within the noise of the fastest, when the lower peak decided. */
  closeTo: number | null;
  /** One sentence: why this one. */
  reason: string;
}

/** Samples per second at G: a micro-steps of `stepMs` each make one optimizer step of G samples. */
export function samplesPerSecond(c: MeasuredCandidate, globalBatchSize: number): number | null {
  if (c.stepMs === null || c.accumulation === null || !(c.stepMs > 0)) return null;
  return globalBatchSize / ((c.accumulation * c.stepMs) / 1000);
}

const fmt = (x: number): string => (x >= 100 ? x.toFixed(0) : x.toPrecision(3));

/**
 * Two peaks this close (a fraction of the larger) are the same peak: neither is lower. A probe's
 * peak of one configuration repeats within 0.1 % for a trainer command (the known-cost trainer,
 * five fits each at 297 MiB: spreads 0.16 and 0.26 MiB) and within 0.9 % for soup's own step
 * (the small template at 16, five fits each: 1.9 MiB of 253, 2.1 of 237); twice the larger. Two
 * configurations equal by construction (checkpointing halving the memory per sample at twice the
 * micro-batch) read 296.9 and 297.0 MiB: without this, 0.1 MiB of sampling decided their tie.
 */
export const SAME_PEAK_FRACTION = 0.02;

/**
 * Whether peak `a` is lower than `b` beyond the peaks' own resolution (an unknown peak is never lower; any known one is
 * lower than an unknown).
 */
export function peakIsLower(a: number | null, b: number | null): boolean {
  if (a === null) return false;
  if (b === null) return true;
  return a < b * (1 - SAME_PEAK_FRACTION);
}

/**
 * The fastest candidate, unless another is within the measurement noise of it (their difference
 * is under two standard errors of the difference, 2·√(se₁² + se₂²)): then the one with the lower
 * measured peak, and the reason says so.
 */
export function chooseConfiguration(
  candidates: readonly MeasuredCandidate[],
  globalBatchSize: number,
): ConfigurationChoice {
  const speeds: CandidateSpeed[] = candidates.map((c) => {
    const sps = samplesPerSecond(c, globalBatchSize);
    const noise = sps !== null && c.noiseMs !== null && c.stepMs! > 0 ? (sps * c.noiseMs) / c.stepMs! : null;
    return { label: c.label, samplesPerSecond: sps, noise };
  });
  const timed = speeds.map((s, i) => ({ ...s, i })).filter((s) => s.samplesPerSecond !== null);
  if (timed.length === 0) return { chosen: null, speeds, closeTo: null, reason: 'no candidate could be timed' };
  timed.sort((a, b) => b.samplesPerSecond! - a.samplesPerSecond!);
  const best = timed[0]!;
  const se = (s: (typeof timed)[number]): number => s.noise ?? 0;
  const band = (s: (typeof timed)[number]): number => 2 * Math.hypot(se(best), se(s));
  const close = timed.slice(1).filter((s) => best.samplesPerSecond! - s.samplesPerSecond! <= band(s));
  if (close.length > 0) {
    const pool = [best, ...close];
    const peakOrNull = (s: (typeof timed)[number]): number | null => candidates[s.i]!.peakBytes;
    const peakOf = (s: (typeof timed)[number]): number => peakOrNull(s) ?? Number.POSITIVE_INFINITY;
    const lowest = pool.reduce((a, b) => (peakOf(b) < peakOf(a) ? b : a));
    if (lowest !== best && peakIsLower(peakOrNull(lowest), peakOrNull(best))) {
      return {
        chosen: lowest.i,
        speeds,
        closeTo: best.i,
        reason:
          `${lowest.label} (${fmt(lowest.samplesPerSecond!)} samples/s) is within the measured noise of ` +
          `${best.label} ` +
          `(${fmt(best.samplesPerSecond!)}; two standard errors of the difference: ${fmt(band(lowest))}` +
          `), and its peak is lower: the lower peak wins a tie`,
      };
    }
    const MiB = 2 ** 20;
    const peakNote =
      lowest === best || !Number.isFinite(peakOf(lowest))
        ? `${best.label} also has the lower (or only known) peak`
        : `${lowest.label}'s peak is the same as ${best.label}'s within the probe's resolution (` +
          `${(peakOf(lowest) / MiB).toFixed(1)} and ${(peakOf(best) / MiB).toFixed(1)} MiB, within ` +
          `${SAME_PEAK_FRACTION * 100} %): the faster stands`;
    return {
      chosen: best.i,
      speeds,
      closeTo: close[0]!.i,
      reason:
        `${best.label} is the fastest (${fmt(best.samplesPerSecond!)} samples/s) but ${close[0]!.label}` +
        ` is within the measured noise ` +
        `(${fmt(close[0]!.samplesPerSecond!)}; two standard errors of the difference: ${fmt(band(close[0]!))}); ` +
        `${peakNote}`,
    };
  }
  const next = timed[1];
  return {
    chosen: best.i,
    speeds,
    closeTo: null,
    reason:
      next === undefined
        ? `${best.label} is the only candidate timed to the end (${fmt(best.samplesPerSecond!)} samples/s)`
        : `${best.label} is the fastest: ${fmt(best.samplesPerSecond!)} samples/s, ` +
          `${(best.samplesPerSecond! / next.samplesPerSecond!).toFixed(2)}× ${next.label} ` +
          `(${fmt(next.samplesPerSecond!)}), beyond the measured noise (two standard errors of the difference: ` +
          `${fmt(band(next))})`,
  };
}
