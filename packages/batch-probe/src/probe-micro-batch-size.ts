import { NoBatchFitsError, OutOfMemoryError } from './errors';
import { divisorsOf, perRankBatch } from './divisors';
import { isOutOfMemoryError } from './is-out-of-memory-error';
import { optionalFunction, positiveInt } from './_validate';
import { InvalidBatchOptionError } from './errors';
import type { ProbeFn, ProbeOutcome, TrialPhase, TrialRecord } from './types';

/** Options of {@link probeMicroBatchSize}. */
export interface ProbeMicroBatchSizeOptions {
  /** G: samples per optimizer step (the run's hyper-parameter; the probe never changes it). */
  globalBatchSize: number;
  /** Ranks sharing G (a launcher's world size): candidates are the divisors of G / worldSize. @default 1 */
  worldSize?: number;
  /** First candidate: the largest divisor ≤ this. @default G / worldSize */
  start?: number;
  /** No candidate above this (a cap, e.g. the largest batch a cache entry proved). @default G / worldSize */
  ceiling?: number;
  /**
   * Only candidates above this: a lighter configuration already fits every micro-batch up to it
   * (soup's tuner asks a tier that recomputes more only for what the lighter tier cannot fit).
   * When none above it fits, the search throws {@link NoBatchFitsError} with the smallest tried.
   * @default 0
   */
  floor?: number;
  /**
   * Fraction of the budget kept free: a trial that fits but whose measured peak is above
   * (1 − headroom) × budget counts as not fitting (e.g. 0.1: peak ≤ 90 % of the budget). A trial
   * without a measured peak and budget cannot be held to it and is judged as the probe said.
   * @default 0
   */
  headroom?: number;
  /**
   * Search from the smallest candidate up, the cheapest trials where a trial's cost grows with its
   * size (a CPU budget's over-budget trial runs until it crosses the budget). Once two fits report
   * a peak and a budget, the line through the two farthest apart predicts the rest: the search
   * jumps to the largest divisor the line keeps under the budget, and after a fit stops without
   * trying the next divisor when the line puts that one more than `margin` over the budget
   * (bound `predicted`: a larger divisor was not tried, and was not needed to prove a fit).
   * @default undefined (gallop from `start`)
   */
  fromBelow?: { margin: number };
  /**
   * In the search from `start`: while galloping up, stop without trying the next divisor when the
   * line through the two farthest-apart fits with a peak puts it more than `margin` over the budget
   * (bound `predicted`). The answer is still a size that was run and fit.
   * @default undefined (try it)
   */
  predictStop?: { margin: number };
  /** @default isOutOfMemoryError */
  isOom?: (err: unknown) => boolean;
  /** Called after every trial, in order (awaited). */
  onTrial?: (trial: TrialRecord) => void | Promise<void>;
  signal?: AbortSignal;
}

/** What {@link probeMicroBatchSize} found. */
export interface ProbeMicroBatchSizeResult {
  /** m: the largest divisor of G / worldSize that fits. */
  microBatchSize: number;
  /** a = G / (m × worldSize). */
  accumulation: number;
  trials: TrialRecord[];
  /**
   * `exact`: the next larger divisor was seen not to fit; `capped`: m is the largest candidate
   * (G / worldSize, or the largest divisor under `ceiling`); `predicted` (`fromBelow`, `predictStop`): the next
   * larger divisor's peak, from the line through the measured fits, is over the budget by the margin.
   */
  bound: 'exact' | 'capped' | 'predicted';
}

/**
 * Finds the micro-batch m: the largest divisor of G / worldSize that fits, calling `probe` only on
 * divisors. From the largest divisor ≤ `start`, it gallops up (or down) the sorted divisors while
 * they fit (fail), then bisects between the last fit and the first failure: about
 * 2·log2(number of divisors) trials. G = 24 with a capacity of 10 tries 24 → 12 → 6 → 8 and answers
 * m = 8, a = 3. A prime G has two candidates: G = 7 with a capacity of 3 answers m = 1, a = 7 (it
 * fits; the accumulation is long, and the caller may say so).
 *
 * @throws {NoBatchFitsError} not even m = 1 fits
 * @throws {InvalidBatchOptionError} a bad option, or G not a multiple of worldSize
 */
export async function probeMicroBatchSize(
  probe: ProbeFn,
  options: ProbeMicroBatchSizeOptions,
): Promise<ProbeMicroBatchSizeResult> {
  if (typeof probe !== 'function')
    throw new InvalidBatchOptionError(
      `probe must be a function (batchSize) => Promise<{fits: boolean}> (got ${typeof probe})`,
      { field: 'probe' },
    );
  const worldSize = options.worldSize ?? 1;
  const perRank = perRankBatch(options.globalBatchSize, worldSize);
  const ceiling = positiveInt('ceiling', options.ceiling ?? perRank);
  const start = positiveInt('start', options.start ?? perRank);
  const floor = options.floor ?? 0;
  if (!Number.isInteger(floor) || floor < 0)
    throw new InvalidBatchOptionError(
      `floor must be a non-negative integer, the largest micro-batch already known to fit (got ${String(floor)})`,
      { field: 'floor' },
    );
  const headroom = options.headroom ?? 0;
  if (typeof headroom !== 'number' || !(headroom >= 0 && headroom < 1)) {
    throw new InvalidBatchOptionError(
      `headroom must be a fraction in [0, 1), e.g. 0.1 for 10 % (got ${String(headroom)})`,
      { field: 'headroom' },
    );
  }
  const isOom = optionalFunction('isOom', options.isOom) ?? isOutOfMemoryError;
  const onTrial = optionalFunction('onTrial', options.onTrial);
  const candidates = divisorsOf(perRank).filter((d) => d <= ceiling && d > floor);
  if (candidates.length === 0)
    throw new InvalidBatchOptionError(
      `no divisor of ${perRank} lies above floor ${floor} and at most ceiling ${ceiling}: nothing to search`,
      { field: 'floor' },
    );
  const trials: TrialRecord[] = [];

  const fitsAt = async (i: number, phase: TrialPhase): Promise<boolean> => {
    options.signal?.throwIfAborted();
    const batchSize = candidates[i]!;
    const t0 = performance.now();
    let outcome: ProbeOutcome | undefined;
    let oom: unknown;
    let oomSeen = false;
    try {
      outcome = await probe(batchSize);
    } catch (err) {
      if (!isOom(err)) throw err;
      oom = err;
      oomSeen = true;
    }
    const ms = performance.now() - t0;
    let record: TrialRecord;
    if (oomSeen) {
      record = { index: trials.length + 1, batchSize, phase, fits: false, result: 'oom', ms };
      if (oom instanceof OutOfMemoryError) {
        if (oom.peakBytes !== undefined) record.peakBytes = oom.peakBytes;
        if (oom.budgetBytes !== undefined) record.budgetBytes = oom.budgetBytes;
      }
      const message = oom instanceof Error ? oom.message : String(oom);
      if (message) record.detail = message;
    } else {
      if (typeof outcome !== 'object' || outcome === null || typeof outcome.fits !== 'boolean') {
        throw new InvalidBatchOptionError(
          `the probe resolved to ${JSON.stringify(outcome)} at ${batchSize}; it must resolve to {fits: boolean}`,
          { field: 'probe' },
        );
      }
      record = {
        index: trials.length + 1,
        batchSize,
        phase,
        fits: outcome.fits,
        result: outcome.fits ? 'fit' : 'not-fit',
        ms,
      };
      if (typeof outcome.peakBytes === 'number') record.peakBytes = outcome.peakBytes;
      if (typeof outcome.budgetBytes === 'number') record.budgetBytes = outcome.budgetBytes;
      if (typeof outcome.detail === 'string') record.detail = outcome.detail;
      if (typeof outcome.measurement === 'string') record.measurement = outcome.measurement;
      const { peakBytes, budgetBytes } = record;
      if (
        record.fits &&
        headroom > 0 &&
        peakBytes !== undefined &&
        budgetBytes !== undefined &&
        peakBytes > (1 - headroom) * budgetBytes
      ) {
        record.fits = false;
        record.result = 'not-fit';
        record.detail =
          `peak ${peakBytes} bytes is above ${Math.round((1 - headroom) * 100)} % of the budget ` +
          `${budgetBytes} (headroom ${Math.round(headroom * 100)} %)`;
      }
    }
    trials.push(record);
    if (onTrial) await onTrial(record);
    return record.fits;
  };

  if (options.fromBelow)
    return searchFromBelow(candidates, fitsAt, trials, perRank, headroom, options.fromBelow.margin);
  const stopMargin = options.predictStop?.margin;
  if (stopMargin !== undefined && !(stopMargin >= 0))
    throw new InvalidBatchOptionError(
      `predictStop.margin must be a fraction >= 0, e.g. 0.1 for 10 % (got ${String(stopMargin)})`,
      { field: 'predictStop.margin' },
    );
  let lo = -1; // largest index seen to fit
  let hi = candidates.length; // smallest index seen not to fit
  let first = 0;
  for (let i = 0; i < candidates.length; i++) if (candidates[i]! <= start) first = i;
  if (await fitsAt(first, 'halve')) {
    lo = first;
    for (let step = 1; lo + 1 < hi; step *= 2) {
      const l = stopMargin === undefined ? null : peakLine(trials, headroom);
      if (l !== null && l.at(candidates[lo + 1]!) > l.limit * (1 + stopMargin!)) {
        return { microBatchSize: candidates[lo]!, accumulation: perRank / candidates[lo]!, trials, bound: 'predicted' };
      }
      const j = Math.min(lo + step, hi - 1);
      if (await fitsAt(j, 'double')) lo = j;
      else {
        hi = j;
        break;
      }
    }
  } else {
    hi = first;
    for (let step = 1; hi > 0; step *= 2) {
      const j = Math.max(hi - step, 0);
      if (await fitsAt(j, 'halve')) {
        lo = j;
        break;
      }
      hi = j;
    }
    if (lo < 0) throw new NoBatchFitsError(candidates[0]!, trials);
  }
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (await fitsAt(mid, 'refine')) lo = mid;
    else hi = mid;
  }
  const m = candidates[lo]!;
  return { microBatchSize: m, accumulation: perRank / m, trials, bound: hi === candidates.length ? 'capped' : 'exact' };
}

/** {@link ProbeMicroBatchSizeOptions.fromBelow}: see there. */
async function searchFromBelow(
  candidates: readonly number[],
  fitsAt: (i: number, phase: TrialPhase) => Promise<boolean>,
  trials: readonly TrialRecord[],
  perRank: number,
  headroom: number,
  margin: number,
): Promise<ProbeMicroBatchSizeResult> {
  if (!(margin >= 0))
    throw new InvalidBatchOptionError(
      `fromBelow.margin must be a fraction >= 0, e.g. 0.1 for 10 % (got ${String(margin)})`,
      { field: 'fromBelow.margin' },
    );
  const line = (): { at: (m: number) => number; limit: number } | null => peakLine(trials, headroom);
  if (!(await fitsAt(0, 'double'))) throw new NoBatchFitsError(candidates[0]!, trials as TrialRecord[]);
  let lo = 0;
  let hi = candidates.length;
  while (lo + 1 < hi) {
    const l = line();
    let j = lo + 1;
    if (l !== null) {
      // Stop: the next divisor is predicted over the budget by more than the margin.
      if (l.at(candidates[lo + 1]!) > l.limit * (1 + margin)) {
        return {
          microBatchSize: candidates[lo]!,
          accumulation: perRank / candidates[lo]!,
          trials: [...trials],
          bound: 'predicted',
        };
      }
      for (let k = lo + 1; k < hi; k++) if (l.at(candidates[k]!) <= l.limit) j = k;
    }
    if (await fitsAt(j, l !== null ? 'predict' : 'double')) lo = j;
    else hi = j;
  }
  return {
    microBatchSize: candidates[lo]!,
    accumulation: perRank / candidates[lo]!,
    trials: [...trials],
    bound: hi === candidates.length ? 'capped' : 'exact',
  };
}

/**
 * The line through the two farthest-apart fits with a measured peak, and the budget (less the headroom) they were held
 * to; null without two.
 */
function peakLine(
  trials: readonly TrialRecord[],
  headroom: number,
): { at: (m: number) => number; limit: number } | null {
  const fits = trials
    .filter((t) => t.fits && t.peakBytes !== undefined && t.budgetBytes !== undefined)
    .sort((a, b) => a.batchSize - b.batchSize);
  if (fits.length < 2) return null;
  const [a, b] = [fits[0]!, fits.at(-1)!];
  const slope = (b.peakBytes! - a.peakBytes!) / (b.batchSize - a.batchSize);
  if (!(slope > 0)) return null;
  return { at: (m) => a.peakBytes! + slope * (m - a.batchSize), limit: (1 - headroom) * b.budgetBytes! };
}
