export { probeBatchSize, type ProbeBatchSizeOptions, type ProbeBatchSizeResult } from './probe-batch-size';
export {
  pickBatchSize,
  type PickBatchSizeOptions,
  type PickBatchSizeResult,
  type BatchSizeStrategy,
} from './pick-batch-size';
export { isOutOfMemoryError } from './is-out-of-memory-error';
export { makeCacheKey, CACHE_KEY_VERSION, type CacheKeyFields } from './make-cache-key';
export { resolveCachePath, CACHE_PATH_ENV, type CachePathInfo } from './resolve-cache-path';
export { loadCache } from './load-cache';
export { listCacheEntries } from './list-cache-entries';
export { saveCacheEntry, type SaveCacheEntryOptions, type SaveCacheEntryResult } from './save-cache-entry';
export { lookupCacheEntry, type LookupCacheEntryOptions, type LookupCacheEntryResult } from './lookup-cache-entry';
export { clearCache, type ClearCacheOptions, type ClearCacheResult } from './clear-cache';
export {
  cacheEntryRecord,
  isCacheKey,
  type CacheEntryRecord,
  type CacheProvenanceRecord,
} from './cache-entry-record';
export {
  BatchProbeError,
  type BatchProbeErrorCode,
  OutOfMemoryError,
  NoBatchFitsError,
  InvalidBatchOptionError,
  InvalidProbeOutcomeError,
  CacheLockError,
  CacheWriteError,
  CorruptCacheError,
} from './errors';
export type {
  ProbeOutcome,
  ProbeFn,
  TrialRecord,
  TrialPhase,
  BatchLogger,
  CacheLocationOptions,
  CacheLockOptions,
  CacheEntry,
  CacheProvenance,
} from './types';
export {
  probeMicroBatchSize,
  type ProbeMicroBatchSizeOptions,
  type ProbeMicroBatchSizeResult,
} from './probe-micro-batch-size';
export { divisorsOf, largestDivisorAtMost, nextMicroBatchSize, perRankBatch, formatMicroBatch } from './divisors';
export { lowerCacheEntry, type LowerCacheEntryOptions, type LowerCacheEntryResult } from './lower-cache-entry';
export { writeCacheFileLocked } from './write-cache-file-locked';
export { formatBytes, formatBytesApart } from './format-bytes';
export { flatPeak, FLAT_PEAK_FRACTION, type FlatPeak, type FlatPeakTrial } from './flat-peak';
