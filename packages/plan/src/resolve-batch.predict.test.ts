// resolveBatch with a global batch: --no-predict (predict: false) is a plain bisection over the
// divisors of G, also where the caller asked for the search from below (--try's fits). The probe
// is a capacity model: peak = 50 + 40 × m MiB against a 400 MiB budget (m = 8 fits, 16 does not).
import type { ProbeTrialOutcome } from '@soup/cuda-probe';
import { useTempDir } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import { resolveBatch } from './resolve-batch';

const MiB = 2 ** 20;

async function trialsOf(predict: boolean): Promise<number[]> {
  const cwd = useTempDir();
  const r = await resolveBatch({
    env: { HOME: cwd },
    cwd,
    signal: new AbortController().signal,
    probe: async (m): Promise<ProbeTrialOutcome> => {
      const peakBytes = (50 + 40 * m) * MiB;
      const fits = peakBytes <= 400 * MiB;
      return {
        fits,
        batchSize: m,
        reason: fits ? 'fit' : 'over-budget',
        measurement: 'sampled-rss',
        detail: '',
        ms: 1,
        peakBytes,
        budgetBytes: 400 * MiB,
        censored: !fits,
      };
    },
    key: { base: 'exec:x', maxLength: 512, quantization: 'none', loraR: 0, gpuName: 'cpu', gpuMemoryGb: 1 },
    budgetBytes: 400 * MiB,
    predict,
    globalBatchSize: 32,
    start: 1,
    ceiling: 32,
    fromBelow: { margin: 0.1 },
    noCache: true,
  });
  expect(r.batchSize).toBe(8);
  return r.trials.map((t) => t.batch_size);
}

describe('resolveBatch: --no-predict with a global batch', () => {
  it('bisects the divisors where the predictive search jumps along the line through the peaks', async () => {
    expect(await trialsOf(true)).toEqual([1, 2, 8]);
    expect(await trialsOf(false)).toEqual([1, 2, 8, 32, 16]);
  });
});
