import { readCacheFile } from './_cache-file';
import { resolveCachePath } from './resolve-cache-path';
import type { CacheLocationOptions } from './types';

/**
 * Reads the batch cache as `{key: batchSize}`. Tolerant like the original: a missing or corrupt
 * file, or one that is not a JSON object, reads as `{}`; entries that are not positive integers
 * are skipped. Never throws.
 */
export async function loadCache(options: CacheLocationOptions = {}): Promise<Record<string, number>> {
  return Object.fromEntries(await readCacheFile(resolveCachePath(options).path));
}
