import { loadCache } from './load-cache';
import { resolveCachePath } from './resolve-cache-path';
import { saveCacheEntry } from './save-cache-entry';
import { positiveInt, string } from './_validate';
import type { CacheKeyFields } from './make-cache-key';
import type { CacheLocationOptions, CacheLockOptions } from './types';

/** Options of {@link lowerCacheEntry}. */
export interface LowerCacheEntryOptions extends CacheKeyFields, CacheLocationOptions, CacheLockOptions {
  /** The cache key (see `makeCacheKey`). */
  key: string;
  /** The size that failed (e.g. the micro-batch a run was training with when it ran out of memory). */
  failedBatchSize: number;
  /** The size to remember instead (smaller than `failedBatchSize`). */
  batchSize: number;
  /** The memory budget the entry is for, as the search that found it had. @default null */
  budgetBytes?: number | null;
  /** Why, kept in the provenance, e.g. `mid-run OOM at step 120`. */
  note: string;
}

/** What {@link lowerCacheEntry} did. */
export interface LowerCacheEntryResult {
  /** The entry now holds `batchSize`. */
  lowered: boolean;
  /** What it held before (null: no entry, and none is made). */
  previous: number | null;
  path: string;
  /** Why it was not lowered (already at or below, or the write failed). */
  why?: string;
}

/**
 * Lowers a cached answer after `failedBatchSize` was seen to run out of memory: the entry becomes
 * `batchSize` (unless it already holds that or less; a key with no entry gets none), with a provenance whose `note`
 * says why and
 * whose bound is `exact` with `ceiling` = the size that failed, so any later search of the same
 * key uses it instead of probing back up to the size that failed. The main file keeps the Python
 * layout (key → int); best-effort like every cache write.
 */
export async function lowerCacheEntry(o: LowerCacheEntryOptions): Promise<LowerCacheEntryResult> {
  const key = string('key', o.key, true);
  const failed = positiveInt('failedBatchSize', o.failedBatchSize);
  const batchSize = positiveInt('batchSize', o.batchSize);
  const location = {
    env: o.env,
    homeDir: o.homeDir,
    cwd: o.cwd,
    tmpDir: o.tmpDir,
    lockTimeoutMs: o.lockTimeoutMs,
    staleLockMs: o.staleLockMs,
  };
  const previous = (await loadCache(location))[key] ?? null;
  // Only an answer the cache holds is lowered: a failure proves the old size wrong, not the new one right.
  if (previous === null)
    return {
      lowered: false,
      previous,
      path: resolveCachePath(location).path,
      why: 'the cache holds no entry for this key',
    };
  if (previous <= batchSize)
    return { lowered: false, previous, path: resolveCachePath(location).path, why: `it already holds ${previous}` };
  const save = await saveCacheEntry({
    ...location,
    key,
    batchSize,
    provenance: {
      base: o.base,
      maxLength: o.maxLength,
      quantization: o.quantization,
      loraR: o.loraR,
      gpuName: o.gpuName,
      gpuMemoryGb: o.gpuMemoryGb,
      budgetBytes: o.budgetBytes ?? null,
      ceiling: failed,
      bound: 'exact',
      measurement: 'unknown',
      note: o.note,
    },
  });
  return save.saved
    ? { lowered: true, previous, path: save.path }
    : { lowered: false, previous, path: save.path, why: save.error.message };
}
