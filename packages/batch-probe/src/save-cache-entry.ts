import { readCacheFileStrict, serializeCache, writeFileAtomic } from './_cache-file';
import { metaPathOf, readMetaFile, serializeMeta } from './_meta-file';
import { withLock } from './_lock';
import { lockOptionsOf } from './_lock-options';
import { positiveInt, string } from './_validate';
import { resolveCachePath } from './resolve-cache-path';
import type { CacheLocationOptions, CacheLockOptions, CacheProvenance } from './types';

/** Options of {@link saveCacheEntry}. */
export interface SaveCacheEntryOptions extends CacheLocationOptions, CacheLockOptions {
  /** The cache key (see {@link makeCacheKey}); a non-empty string. */
  key: string;
  /** The batch size to remember; a positive integer. */
  batchSize: number;
  /**
   * How the answer was found, written to the side file beside the cache (`batch_cache.meta.json`)
   * under the same lock, after the main file. Without it, a provenance the key had is removed
   * (it described another answer).
   * @default none
   */
  provenance?: Omit<CacheProvenance, 'batchSize' | 'savedAt'> & { savedAt?: string };
}

/** What {@link saveCacheEntry} did. It never throws on I/O: the cache is best-effort. */
export type SaveCacheEntryResult =
  | { saved: true; path: string }
  | {
      saved: false;
      path: string;
      /** Why not: the file-system error (read-only home, ...) or a {@link CacheLockError}. */
      error: Error;
    };

/**
 * Inserts or updates one cache entry, keeping every other entry, including those another process
 * wrote a moment ago: the read-modify-write runs under a cross-process lock file
 * (`<cache>.lock`), and the file is replaced atomically (temp file + rename, mode 0600).
 * Best-effort like the original: a read-only home or a lock that cannot be taken yields
 * `{saved: false, error}`, never an exception. The provenance goes to the side file (see
 * {@link SaveCacheEntryOptions.provenance}); the main file keeps the Python layout. A corrupt cache file is never
 * overwritten: `{saved: false, error}` with a {@link CorruptCacheError} naming it and the fix. Invalid
 * `key`/`batchSize` do throw {@link InvalidBatchOptionError}.
 */
export async function saveCacheEntry(options: SaveCacheEntryOptions): Promise<SaveCacheEntryResult> {
  const key = string('key', options.key, true);
  const batchSize = positiveInt('batchSize', options.batchSize);
  const lock = lockOptionsOf(options);
  const { path } = resolveCachePath(options);
  try {
    await withLock(`${path}.lock`, lock, async () => {
      const cache = await readCacheFileStrict(path);
      cache.set(key, batchSize);
      await writeFileAtomic(path, serializeCache(cache));
      const metaPath = metaPathOf(path);
      const meta = await readMetaFile(metaPath);
      if (options.provenance !== undefined) {
        meta.set(key, {
          ...options.provenance,
          batchSize,
          savedAt: options.provenance.savedAt ?? new Date().toISOString(),
        });
      } else if (!meta.delete(key)) return;
      await writeFileAtomic(metaPath, serializeMeta(meta));
    });
    return { saved: true, path };
  } catch (err) {
    return { saved: false, path, error: err instanceof Error ? err : new Error(String(err)) };
  }
}
