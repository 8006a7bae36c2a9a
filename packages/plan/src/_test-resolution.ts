// Tests' BatchResolution: a probed answer of 8, cached, no trial; `over` sets what a test is about.
import type { BatchResolution } from './resolve-batch';

export const resolutionOf = (over: Partial<BatchResolution> = {}): BatchResolution => ({
  batchSize: 8,
  source: 'probe',
  cacheKey: 'k'.repeat(32),
  cachePath: '/tmp/batch_cache.json',
  trials: [],
  chosen: null,
  provenance: null,
  skippedCache: null,
  cappedFrom: null,
  saved: true,
  notSavedReason: null,
  keyUnknown: null,
  flatPeak: null,
  ...over,
});
