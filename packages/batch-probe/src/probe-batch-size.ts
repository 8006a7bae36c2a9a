import { InvalidBatchOptionError, InvalidProbeOutcomeError, NoBatchFitsError, OutOfMemoryError } from './errors';
import { isOutOfMemoryError } from './is-out-of-memory-error';
import { predictSearch } from './_predict-search';
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
  // 2'. Predict (see _predict-search.ts): the trials it makes share the bracket with what follows.
  if (predict) {
    const state = { lastGood, firstBad, doublings };
    await predictSearch({ trials, fitsAt, state, startUnits, ceilingUnits, maxDoublings, multipleOf });
    ({ lastGood, firstBad, doublings } = state);
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
