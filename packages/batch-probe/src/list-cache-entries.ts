import { readCacheFile } from './_cache-file';
import { resolveCachePath } from './resolve-cache-path';
import type { CacheEntry, CacheLocationOptions } from './types';

/** The valid entries of the batch cache, sorted by key (what `soup cache ls` shows). Never throws. */
export async function listCacheEntries(options: CacheLocationOptions = {}): Promise<CacheEntry[]> {
  const cache = await readCacheFile(resolveCachePath(options).path);
  return [...cache.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, batchSize]) => ({ key, batchSize }));
}
