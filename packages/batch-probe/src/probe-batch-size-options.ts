// The options and result of probeBatchSize (probe-batch-size.ts).
import type { TrialRecord } from './types';

/** Options of `probeBatchSize`. */
export interface ProbeBatchSizeOptions {
  /**
   * First batch size tried (a positive integer). With `multipleOf`, it is rounded down to a
   * multiple (and up to `multipleOf` itself when smaller).
   */
  start: number;
  /** Hard cap: the probe is never called above it. An integer `>= start`. */
  ceiling: number;
  /**
   * Most successful doublings after the first fit, as in the original (it keeps a runaway probe
   * short). With `refine`, the bisection still closes the gap up to the ceiling when the doublings
   * run out before any failure.
   * @default 8
   */
  maxDoublings?: number;
  /**
   * After the doublings, bisect between the last size that fitted and the first that did not, so
   * the result is the exact largest size that fits (up to `multipleOf`). `false` reproduces the
   * original halve-then-double search call for call (its result can be up to half the true one).
   * @default true
   */
  refine?: boolean;
  /**
   * Keep every candidate on a multiple of this (e.g. 8 for tensor cores). When even `multipleOf`
   * does not fit, the search throws {@link NoBatchFitsError}.
   * @default 1
   */
  multipleOf?: number;
  /**
   * Decides whether an error thrown by the probe means "out of memory" (then the size does not
   * fit); any other error propagates unchanged and ends the search.
   * @default isOutOfMemoryError (this package's OutOfMemoryError, or any error with code `SOUP_OOM`)
   */
  isOom?: (err: unknown) => boolean;
  /**
   * Predictive search: once a size fits and trials report `peakBytes` and `budgetBytes`, try the
   * ceiling (it fits: the answer; it fails: the widest span to take a slope on), fit the peak
   * (the line through the farthest-apart sizes, or the parabola through a third when it bends
   * up) and jump to the predicted edge b*, then confirm it: b* fits → b*+1, b* fails → b*-1; any
   * measured fit next to a measured failure closes the search, so noise (fit/no-fit not monotone
   * near the edge) costs a short walk (steps 1, 2, 4, ...) and a small bisection, not a restart.
   * Where failures are censored (`censorsFailures`: a failed trial is stopped at the budget, so it
   * adds no point), a doubling gives the second point, the earliest edge two points allow the
   * third, and every later trial is the edge the measured peaks predict (least squares over all of
   * them, through the one nearest the budget, so a few MiB of noise moves it a size at most); a
   * failure that contradicts the model walks down from it.
   * The answer is always a size measured to fit, with the next size measured not to fit (or the
   * ceiling). No measured peak hands over to the doubling and bisection of `refine`; every trial
   * is made only while the search that may follow could not exceed the most trials refine makes
   * for this start and ceiling (over every capacity), so the bound is never worse than refine's.
   * Needs `refine`.
   * @default false
   */
  predict?: boolean;
  /** Called after every trial, in order (awaited when it returns a promise). */
  onTrial?: (trial: TrialRecord) => void | Promise<void>;
  /** Aborts the search between trials (the probe itself receives no signal from here). */
  signal?: AbortSignal;
}

/** Result of `probeBatchSize`. */
export interface ProbeBatchSizeResult {
  /** The largest batch size found to fit. */
  batchSize: number;
  /** Every trial, in order. */
  trials: TrialRecord[];
  /**
   * Whether the search proved this is the edge: `batchSize + multipleOf` was seen not to fit, or
   * `batchSize` is the largest allowed size under the ceiling. Always true with `refine`, unless the
   * probe is non-monotonic.
   */
  exact: boolean;
  /**
   * `exact`: `batchSize + multipleOf` was seen not to fit; `capped`: `batchSize` is the largest
   * size under the ceiling and nothing above it was tried (a higher ceiling may find more);
   * `unproven`: neither (refine off, or a probe that is not monotonic).
   */
  bound: 'exact' | 'capped' | 'unproven';
}
