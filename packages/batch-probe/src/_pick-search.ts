// The search pickBatchSize runs on a cache miss: over the divisors of G / worldSize when a global
// batch is set (probeMicroBatchSize), else over every batch size (probeBatchSize).
import { probeBatchSize, type ProbeBatchSizeOptions, type ProbeBatchSizeResult } from './probe-batch-size';
import { probeMicroBatchSize, type ProbeMicroBatchSizeOptions } from './probe-micro-batch-size';
import type { ProbeFn } from './types';

/** The search's knobs, as pickBatchSize's options carry them. */
export type PickSearchOptions = Pick<
  ProbeBatchSizeOptions,
  'maxDoublings' | 'refine' | 'predict' | 'multipleOf' | 'isOom' | 'onTrial' | 'signal'
> &
  Partial<Pick<ProbeMicroBatchSizeOptions, 'globalBatchSize' | 'worldSize' | 'headroom' | 'fromBelow' | 'predictStop'>>;

export async function searchBatchSize(
  probe: ProbeFn,
  o: PickSearchOptions,
  start: number,
  ceiling: number,
): Promise<Pick<ProbeBatchSizeResult, 'batchSize' | 'trials' | 'bound'>> {
  return o.globalBatchSize !== undefined
    ? await probeMicroBatchSize(probe, {
        globalBatchSize: o.globalBatchSize,
        ...(o.worldSize !== undefined ? { worldSize: o.worldSize } : {}),
        start,
        ceiling,
        ...(o.headroom !== undefined ? { headroom: o.headroom } : {}),
        ...(o.fromBelow !== undefined ? { fromBelow: o.fromBelow } : {}),
        ...(o.predictStop !== undefined ? { predictStop: o.predictStop } : {}),
        ...(o.isOom !== undefined ? { isOom: o.isOom } : {}),
        ...(o.onTrial !== undefined ? { onTrial: o.onTrial } : {}),
        ...(o.signal !== undefined ? { signal: o.signal } : {}),
      }).then((r) => ({
        batchSize: r.microBatchSize,
        trials: r.trials,
        // The cache holds "fits"; `exact` there means m + 1 was seen not to fit, which a divisor search
        // proves only sometimes.
        bound:
          r.bound === 'capped'
            ? ('capped' as const)
            : r.trials.some((t) => t.batchSize === r.microBatchSize + 1 && !t.fits)
              ? ('exact' as const)
              : ('unproven' as const),
      }))
    : await probeBatchSize(probe, {
        start,
        ceiling,
        maxDoublings: o.maxDoublings,
        refine: o.refine,
        predict: o.predict,
        multipleOf: o.multipleOf,
        isOom: o.isOom,
        onTrial: o.onTrial,
        signal: o.signal,
      });
}
