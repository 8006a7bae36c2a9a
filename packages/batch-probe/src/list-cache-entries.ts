import { readCacheFileStrict } from './_cache-file';
import { metaPathOf, readMetaFile } from './_meta-file';
import { resolveCachePath } from './resolve-cache-path';
import type { CacheEntry, CacheLocationOptions } from './types';

/**
 * The valid entries of the batch cache, sorted by key (what `soup cache ls` shows), each with its
 * provenance from the side file when it has a current one (absent for the Python original's
 * entries, or when the side file is missing, corrupt or describes another value). A missing or empty file lists
 * nothing; a corrupt one throws {@link CorruptCacheError}
 * naming the file (it is not an empty cache).
 */
export async function listCacheEntries(options: CacheLocationOptions = {}): Promise<CacheEntry[]> {
  const { path } = resolveCachePath(options);
  const cache = await readCacheFileStrict(path);
  const meta = await readMetaFile(metaPathOf(path));
  return [...cache.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, batchSize]) => {
      const p = meta.get(key);
      return p !== undefined && p.batchSize === batchSize ? { key, batchSize, provenance: p } : { key, batchSize };
    });
}
