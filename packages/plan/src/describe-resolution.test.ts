import { describe, expect, it } from 'vitest';
import { describeResolution } from './describe-resolution';
import { resolutionOf } from './_test-resolution';
import type { BatchResolution, TrialView } from './resolve-batch';

const key = '0123456789abcdef0123456789abcdef';
const fit = (batch_size: number, measurement = 'sampled-rss'): TrialView => ({
  batch_size,
  phase: 'double',
  result: 'fit',
  peak_bytes: 1,
  budget_bytes: 2,
  ms: 1,
  detail: null,
  measurement,
});
const provenance = {
  batchSize: 8,
  base: 'b',
  maxLength: 64,
  gpuName: 'cpu',
  budgetBytes: null,
  ceiling: 32,
  bound: 'exact' as const,
  measurement: 'peak-rss',
  savedAt: '2026-01-01T00:00:00Z',
};
const base = resolutionOf({ cacheKey: key, trials: [fit(4), fit(8)], chosen: fit(8) });

describe('describeResolution: one sentence for a batch answer, from the cache or from trials', () => {
  it('a probed answer: the device, the trials, the judge, the key it is cached as', () => {
    expect(describeResolution(base, { gpuName: 'cpu' })).toBe(
      `batch size 8 fits (probed on cpu, 2 trials, judged by sampled-rss, cached as ${key})`,
    );
    const one = { ...base, trials: [fit(8)], saved: false, provenance: { ...provenance, bound: 'capped' as const } };
    expect(describeResolution(one, { gpuName: 'T4', micro: { globalBatchSize: 32, worldSize: 2 } })).toBe(
      'micro-batch 8 × 2 × 2 ranks = 32 fits (probed on T4, 1 trial, judged by sampled-rss, not cached; capped: 8 ' +
        'is the ceiling of the search (--ceiling))',
    );
  });

  it('a cached answer: its key and provenance, a larger answer capped by the ceiling, how to probe again', () => {
    const cached = { ...base, source: 'cache' as const, trials: [], chosen: null, provenance, cappedFrom: 16 };
    expect(describeResolution(cached, { gpuName: 'cpu', flagHints: true, style: { bold: (s) => `*${s}*` } })).toBe(
      `batch size *8* (from the cache, key ${key}; exact, judged by peak-rss, budget the device, ceiling 32; its 16 ` +
        'fits, so the ceiling does; --refresh to probe again)',
    );
    const old = { ...cached, provenance: null, cappedFrom: null };
    expect(describeResolution(old, { gpuName: 'cpu', micro: { globalBatchSize: 16, worldSize: 1 } })).toBe(
      `micro-batch 8 × 2 = 16 (from the cache, key ${key}; no provenance: written by the Python tool or an older soup)`,
    );
  });

  it('why an answer was not cached: the unknown key, an exceptions-only judge (with the flags), a flat peak', () => {
    const unknown = { ...base, saved: false, notSavedReason: 'sources unknown', keyUnknown: 'sources unknown' };
    expect(describeResolution(unknown, { gpuName: 'cpu', flagHints: true })).toMatch(
      /, not cached: sources unknown\)$/,
    );
    const raised = {
      ...base,
      chosen: fit(8, 'exceptions-only'),
      saved: false,
      notSavedReason: 'the deciding trial measured no peak (exceptions only): not cached unless asked',
    };
    expect(describeResolution(raised, { gpuName: 'cpu', flagHints: true })).toMatch(
      /judged by exceptions-only, not cached: no trial measured a peak, .*--cache-exceptions-only to cache it anyway\)$/,
    );
    expect(describeResolution(raised, { gpuName: 'cpu' })).toMatch(/, not cached: the deciding trial measured no peak/);
    const flat = { ...base, flatPeak: { warning: 'w' } as BatchResolution['flatPeak'] };
    expect(describeResolution(flat, { gpuName: 'cpu', bound: 'unproven' })).toBe(
      `batch size 8 fits (probed on cpu, 2 trials, judged by sampled-rss, cached as ${key} (unproven); its peak ` +
        'did not grow with the size: see the warning)',
    );
  });
});
