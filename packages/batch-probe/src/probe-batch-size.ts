import { InvalidBatchOptionError, InvalidProbeOutcomeError, NoBatchFitsError, OutOfMemoryError } from './errors';
import { isOutOfMemoryError } from './is-out-of-memory-error';
import { cautiousEdge, fitEdge, type PeakPoint } from './_predict';

/** A trial whose peak lies within this fraction of the budget may be next to the edge: its neighbour is tried next. */
const NEAR_EDGE = 0.05;

import { refineContinuationBound, refineTrialBound } from './_refine-bound';
import { nonNegativeInt, optionalBoolean, optionalFunction, positiveInt } from './_validate';
import type { ProbeFn, ProbeOutcome, TrialPhase, TrialRecord } from './types';
import type { ProbeBatchSizeOptions, ProbeBatchSizeResult } from './probe-batch-size-options';

export type { ProbeBatchSizeOptions, ProbeBatchSizeResult } from './probe-batch-size-options';

/**
 * Finds the largest batch size that fits by calling `probe` on candidates: try `start`; on
 * "does not fit" (an OOM error or `fits: false`) halve (integer division) until a size fits, or
 * throw {@link NoBatchFitsError} at the smallest size; then double while it fits (capped at
 * `ceiling`, at most `maxDoublings` times); then, with `refine` (the default), bisect between the
 * last fit and the first failure. A size already seen to fail is never tried again in refine mode.
 *
 * @throws {InvalidBatchOptionError} a bad option (the error's `field` names it)
 * @throws {NoBatchFitsError} not even the smallest size fits
 * @throws {InvalidProbeOutcomeError} the probe resolved to something else than `{fits: boolean}`
 */
export async function probeBatchSize(probe: ProbeFn, options: ProbeBatchSizeOptions): Promise<ProbeBatchSizeResult> {
  // Over 150 lines: one search whose phases (halve, double, refine, predict) share its trials and bounds.
  if (typeof probe !== 'function') {
    throw new InvalidBatchOptionError(
      `probe must be a function (batchSize) => Promise<{fits: boolean}> (got ${typeof probe})`,
      { field: 'probe' },
    );
  }
  if (typeof options !== 'object' || options === null) {
    throw new InvalidBatchOptionError('probeBatchSize needs an options object with at least {start, ceiling}', {
      field: 'options',
    });
  }
  const start = positiveInt('start', options.start);
  if (typeof options.ceiling !== 'number' || !Number.isSafeInteger(options.ceiling) || options.ceiling < start) {
    throw new InvalidBatchOptionError(
      `ceiling must be an integer >= start (${start}); got ` +
        (typeof options.ceiling === 'number'
          ? String(options.ceiling)
          : `${typeof options.ceiling} ${String(options.ceiling)}`),
      { field: 'ceiling' },
    );
  }
  const ceiling = options.ceiling;
  const maxDoublings = nonNegativeInt('maxDoublings', options.maxDoublings ?? 8);
  const refine = optionalBoolean('refine', options.refine, true);
  const predict = optionalBoolean('predict', options.predict, false);
  if (predict && !refine)
    throw new InvalidBatchOptionError('predict needs refine (the fallback when the fit is poor): drop refine: false', {
      field: 'predict',
    });
  const multipleOf = positiveInt('multipleOf', options.multipleOf ?? 1);
  const isOom = optionalFunction('isOom', options.isOom) ?? isOutOfMemoryError;
  const onTrial = optionalFunction('onTrial', options.onTrial);
  const signal = options.signal;

  // The search runs in units of `multipleOf`: unit u stands for batch size u * multipleOf.
  const ceilingUnits = Math.floor(ceiling / multipleOf);
  if (ceilingUnits < 1) {
    throw new InvalidBatchOptionError(`ceiling (${ceiling}) must be at least multipleOf (${multipleOf})`, {
      field: 'ceiling',
    });
  }
  const startUnits = Math.max(1, Math.floor(start / multipleOf));

  const trials: TrialRecord[] = [];
  const fitsAt = async (units: number, phase: TrialPhase): Promise<boolean> => {
    signal?.throwIfAborted();
    const batchSize = units * multipleOf;
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
      record = { index: trials.length + 1, batchSize, phase, fits: false, result: 'oom', ms, censored: true };
      if (oom instanceof OutOfMemoryError) {
        if (oom.peakBytes !== undefined) record.peakBytes = oom.peakBytes;
        if (oom.budgetBytes !== undefined) record.budgetBytes = oom.budgetBytes;
      }
      const message = oom instanceof Error ? oom.message : String(oom);
      if (message) record.detail = message;
    } else {
      if (typeof outcome !== 'object' || outcome === null || typeof outcome.fits !== 'boolean') {
        throw new InvalidProbeOutcomeError(batchSize, outcome);
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
      if (outcome.censored === true) record.censored = true;
      if (outcome.censorsFailures === true) record.censorsFailures = true;
      if (typeof outcome.warning === 'string') record.warning = outcome.warning;
    }
    trials.push(record);
    if (onTrial) await onTrial(record);
    return record.fits;
  };

  let found: number | undefined;
  let firstBad: number | undefined; // smallest size (units) seen not to fit
  const failed = (units: number): void => {
    firstBad = firstBad === undefined ? units : Math.min(firstBad, units);
  };

  // 1. Halve until something fits.
  for (let units = startUnits; units >= 1; units = Math.floor(units / 2)) {
    if (await fitsAt(units, 'halve')) {
      found = units;
      break;
    }
    failed(units);
  }
  if (found === undefined) throw new NoBatchFitsError(multipleOf, trials);
  let lastGood: number = found;

  let doublings = 0;
  // 2'. Predict: the ceiling, then the edge a peak model puts under the budget, confirmed by its neighbour.
  if (predict) {
    // Never more trials than refine could need for this start and ceiling: a prediction is made
    // only while the search that may follow it (bisection, or doubling then bisection when no
    // size has failed yet) still fits under that bound.
    const bound = refineTrialBound(startUnits, ceilingUnits, maxDoublings);
    // After a prediction, what is left is bisected: of (lastGood, firstBad), or of (lastGood,
    // ceiling] when nothing has failed (never fewer trials than doubling then bisecting, worst case).
    const cont = (good: number, bad: number | undefined) =>
      refineContinuationBound(good, bad ?? ceilingUnits + 1, ceilingUnits, maxDoublings);
    const predictedYet = () => trials.some((t) => t.phase === 'predict');
    // Worst case over the outcomes of trying e (and its neighbour when confirming), then refine's rest.
    const affordable = (e: number, confirm: boolean) => {
      const ifFails = confirm && e - 1 > lastGood ? 2 + cont(lastGood, e - 1) : 1 + cont(lastGood, e);
      const ifFits = confirm
        ? e + 1 < (firstBad ?? ceilingUnits + 1)
          ? 2 + cont(e + 1, firstBad)
          : 1
        : 1 + cont(e, firstBad);
      return trials.length + Math.max(ifFails, ifFits) <= bound;
    };
    let streak = 0; // consecutive prediction rounds that moved the same end of the bracket
    let lastMove: 'up' | 'down' | null = null;
    // After a confirmation that did not close the edge (b* and b* + 1 both fit, or b* and
    // b* - 1 both fail), the direction to walk in while the model misses its own points (noise):
    // in a noisy band any measured fit next to a measured failure is a confirmed edge, and the
    // nearest sizes are the likeliest to give one. Steps of 1, 2, 4, ... from the end of the
    // bracket the walk moves, so that a long walk costs a logarithm; the first step the other
    // way leaves a small bracket to bisect.
    let walk: 'up' | 'down' | null = null;
    // Whether the last prediction measured a peak within NEAR_EDGE of the budget: the model is
    // tracking the edge, so a run of moves on one side is not a stall.
    let lastNearEdge = false;
    let censoredWalks = 0;
    let walked = 0;
    // Where no prediction can be made (or afforded) and no size has failed yet, the next trial
    // is the one refine would make: a doubling. Then predicting is tried again.
    const double = async (): Promise<boolean> => {
      if (firstBad !== undefined || doublings >= maxDoublings || lastGood >= ceilingUnits) return false;
      const candidate = Math.min(lastGood * 2, ceilingUnits);
      if (await fitsAt(candidate, 'double')) {
        lastGood = candidate;
        doublings += 1;
      } else failed(candidate);
      return true;
    };
    for (let round = 0; round < 4 * bound; round++) {
      const high = firstBad ?? ceilingUnits + 1;
      if (high - lastGood <= 1) break;
      // A censored trial (stopped at the budget, killed, out of memory) only says "more than the
      // budget": it bounds the bracket (it failed), it is never a point of the fit.
      const measured = trials.filter(
        (t) => typeof t.peakBytes === 'number' && typeof t.budgetBytes === 'number' && t.censored !== true,
      );
      const budget = measured.at(-1)?.budgetBytes;
      if (budget === undefined) break;
      const points: PeakPoint[] = measured.map((t) => ({ units: t.batchSize / multipleOf, peakBytes: t.peakBytes! }));
      const single = new Set(points.map((p) => p.units)).size === 1;
      let e: number;
      let confirm: boolean;
      let kind: 'far' | 'walk' | 'bisect' | 'predict';
      const fit = fitEdge(points, budget);
      if (single && firstBad === undefined) {
        // One measured size and nothing failed: one point cannot tell the fixed part of the peak
        // from the part that grows with the batch (the proportional guess undershoots badly when
        // the fixed part dominates), and two close points give no slope under measurement
        // noise. So the second trial goes as far as allowed: the ceiling either fits (the answer)
        // or brackets the edge with the widest span there is to take a slope on.
        const censoring = trials.some((t) => t.censored === true || t.censorsFailures === true);
        if (fit === null || censoring) {
          // Where failures are censored (the probe stops a trial at the budget), a failure at the
          // ceiling tells only "the edge is below": a doubling gives a second measured point instead.
          if (await double()) continue;
          if (fit === null) break;
        }
        e = ceilingUnits;
        confirm = false;
        kind = 'far';
      } else if (walk !== null && (fit === null || !fit.consistent)) {
        const step = 2 ** Math.min(walked, 30);
        e = walk === 'up' ? Math.min(lastGood + step, high - 1) : Math.max(high - step, lastGood + 1);
        confirm = false;
        kind = 'walk';
      } else if (streak >= 2 && firstBad !== undefined && !lastNearEdge) {
        // Regula falsi stalls on one side of a curved peak: one bisection step moves the other end.
        e = lastGood + Math.floor((high - lastGood) / 2);
        confirm = false;
        streak = 0;
        kind = 'bisect';
      } else {
        if (fit === null) {
          if (await double()) continue;
          break;
        }
        // A nearly flat rise (under 0.5 % of the budget between the measured sizes: allocator
        // granularity, not a slope) extrapolates far: with no failure seen, such a jump goes no
        // further than doubling would.
        const peaks = points.map((p) => p.peakBytes);
        const flat = !single && Math.max(...peaks) - Math.min(...peaks) < 0.005 * budget;
        const reach = firstBad === undefined && flat ? 2 * lastGood : high - 1;
        // One point (the far trial failed without a measured peak): the proportional guess or a
        // doubling, whichever is larger — a closer second point gives no slope.
        const least = single ? 2 * lastGood : lastGood + 1;
        e = Math.min(high - 1, reach, Math.max(least, fit.edge));
        // After a confirmation that did not close the edge, the edge is near: the model (refitted
        // with two close points that carry measurement noise) may jump far; go no further than the walk would.
        const censors = trials.some((t) => t.censored === true || t.censorsFailures === true);
        if (censors && walk === 'up') e = Math.min(e, lastGood + 2 ** Math.min(walked + 1, 30));
        else if (censors && walk === 'down') e = Math.max(e, high - 2 ** Math.min(walked + 1, 30));
        // A first (proportional) guess is a new point, not an edge to confirm.
        confirm = !single;
        kind = 'predict';
        if (censors && firstBad === undefined && !single && e === fit.edge && e + 1 < high) {
          // Nothing has failed yet: the size just above the predicted edge goes first. Its
          // failure (expected) bounds the bracket to a few sizes, so the edge itself, tried next
          // as the confirmation, stays within the trial bound where edge + 1 after a fit at the
          // edge (bisection up to the ceiling if it fit) would not.
          e += 1;
        }
        if (censors && firstBad === undefined && walk === null && new Set(points.map((p) => p.units)).size === 2) {
          // Two close measured sizes and failures that are only bounds: the line through them
          // overshoots any peak that bends up, and its censored failure adds no point to correct
          // it (4+ 8+ 67- 37- 22+ 30+ 31- on b² memory). So the third trial aims just under the
          // budget for the most bent-up peak the two points allow: it fits under linear and
          // quadratic memory, and its measured peak near the edge lets the next fit land on the
          // edge, closed by its neighbour (5 trials on either).
          const cautious = cautiousEdge(points, budget);
          if (cautious !== null && cautious < e) {
            e = Math.max(lastGood + 1, cautious);
            confirm = false;
          }
        }
        if (
          firstBad !== undefined &&
          fit.edge >= high &&
          trials.find((t) => t.batchSize === high * multipleOf)?.censored === true &&
          high - lastGood > 3
        ) {
          // The model puts the edge at or past a size that failed: it was just contradicted, and
          // the failure (censored) adds no point to correct it. Trying high - 1 would repeat the
          // same guess; a bisection step adds a point inside the bracket instead.
          e = lastGood + Math.floor((high - lastGood) / 2);
          confirm = false;
          kind = 'bisect';
        }
      }
      // Where confirming could exceed the bound, a single trial may still fit under it.
      if (confirm && !affordable(e, true) && affordable(e, false)) confirm = false;
      if (!affordable(e, confirm)) {
        // With censored failures and the edge just confirmed to lie above (b* and b* + 1 fit), a
        // doubling would fail far above the edge and leave a wide bracket: a short walk up
        // (steps 1, 2, 4) finds the failure next to the edge instead. At most three such steps.
        const censoring = trials.some((t) => t.censored === true || t.censorsFailures === true);
        if (censoring && walk === 'up' && firstBad === undefined && censoredWalks < 3) {
          censoredWalks += 1;
          const step = lastGood + 2 ** Math.min(walked, 30);
          walked += 1;
          if (await fitsAt(Math.min(step, ceilingUnits), 'predict')) lastGood = Math.min(step, ceilingUnits);
          else {
            failed(Math.min(step, ceilingUnits));
            walk = null;
          }
          continue;
        }
        // Once a prediction was made, the bound was checked with bisection as what follows it.
        if (!predictedYet() && (await double())) continue;
        break;
      }
      const fits = await fitsAt(e, 'predict');
      if (fits) lastGood = e;
      else failed(e);
      // A size whose peak came out far from the budget (or unmeasured) is not next to the edge:
      // predicting again, with this point, beats stepping to its neighbour.
      const peakAtE = trials.at(-1)!.censored === true ? undefined : trials.at(-1)!.peakBytes;
      lastNearEdge = typeof peakAtE === 'number' && Math.abs(peakAtE - budget) <= NEAR_EDGE * budget;
      if (confirm && !(typeof peakAtE === 'number' && Math.abs(peakAtE - budget) <= NEAR_EDGE * budget))
        confirm = false;
      if (kind === 'walk') {
        walked += 1;
        if (fits !== (walk === 'up')) break; // turned: bisect the small bracket left
        continue;
      }
      if (kind === 'far') continue;
      // Confirm: b* fits → b* + 1; b* fails → b* - 1. Either closes the edge, or sets the walk.
      walk = null;
      if (confirm) {
        const next = fits ? e + 1 : e - 1;
        const inside = fits ? next < (firstBad ?? ceilingUnits + 1) : next > lastGood;
        if (inside) {
          if (await fitsAt(next, 'predict')) lastGood = next;
          else failed(next);
          walk = fits ? 'up' : 'down';
          walked = 0;
        }
      }
      const move = fits ? 'up' : 'down';
      streak = kind === 'predict' && move === lastMove ? streak + 1 : 1;
      lastMove = move;
    }
  }
  // After a prediction, whatever is left is bisected (up to the ceiling when nothing failed); with none, doubling goes
  // on as today.
  const predicted = trials.some((t) => t.phase === 'predict');

  // 2. Double while it fits (the original's loop; in refine mode a size known to fail is skipped).
  while (!predicted && doublings < maxDoublings && lastGood < ceilingUnits) {
    const candidate = Math.min(lastGood * 2, ceilingUnits);
    if (refine && firstBad !== undefined && candidate >= firstBad) break;
    if (!(await fitsAt(candidate, 'double'))) {
      failed(candidate);
      break;
    }
    lastGood = candidate;
    doublings += 1;
  }

  // 3. Refine: bisect the open interval (lastGood, firstBad), or (lastGood, ceiling] when no failure was seen.
  if (refine) {
    let high = firstBad ?? ceilingUnits + 1;
    while (high - lastGood > 1) {
      const mid: number = lastGood + Math.floor((high - lastGood) / 2);
      if (await fitsAt(mid, 'refine')) lastGood = mid;
      else {
        failed(mid);
        high = mid;
      }
    }
  }

  const edgeSeen = firstBad === lastGood + 1;
  const exact = lastGood === ceilingUnits || edgeSeen;
  return {
    batchSize: lastGood * multipleOf,
    trials,
    exact,
    bound: edgeSeen ? 'exact' : lastGood === ceilingUnits ? 'capped' : 'unproven',
  };
}
