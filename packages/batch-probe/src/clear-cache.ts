import { unlink } from 'node:fs/promises';
import { readCacheFile, readCacheFileStrict, serializeCache, writeFileAtomic } from './_cache-file';
import { metaPathOf, readMetaFile, serializeMeta } from './_meta-file';
import { withLock } from './_lock';
import { lockOptionsOf } from './_lock-options';
import { string } from './_validate';
import { CacheLockError, CacheWriteError, CorruptCacheError } from './errors';
import { resolveCachePath } from './resolve-cache-path';
import type { CacheLocationOptions, CacheLockOptions } from './types';

/** Options of {@link clearCache}. */
export interface ClearCacheOptions extends CacheLocationOptions, CacheLockOptions {
  /** Remove only this key. When absent, the whole cache file is removed. */
  key?: string;
}

/** What {@link clearCache} did. */
export interface ClearCacheResult {
  /** The cache file. */
  path: string;
  /** How many valid entries were removed (0 when the key or the file was not there). */
  removed: number;
}

/**
 * Removes one entry (`key`) or the whole cache (`soup cache clear [key]`), under the same lock as
 * the writers. Unlike {@link saveCacheEntry}, the user asked for this directly, so a failure
 * throws: {@link CacheWriteError} or {@link CacheLockError}.
 */
export async function clearCache(options: ClearCacheOptions = {}): Promise<ClearCacheResult> {
  const key = options.key === undefined ? undefined : string('key', options.key, true);
  const lock = lockOptionsOf(options);
  const { path } = resolveCachePath(options);
  try {
    return await withLock(`${path}.lock`, lock, async () => {
      const cache = await readCacheFile(path);
      const metaPath = metaPathOf(path);
      const removeFile = (p: string) =>
        unlink(p).catch((err: NodeJS.ErrnoException) => {
          if (err.code !== 'ENOENT') throw err;
        });
      if (key === undefined) {
        // A corrupt file is removed too: clearing the whole cache is how its error says to recover.
        await removeFile(path);
        await removeFile(metaPath);
        return { path, removed: cache.size };
      }
      // One key cannot be taken out of a file that does not parse: CorruptCacheError, the file left as it is.
      if (cache.size === 0) await readCacheFileStrict(path);
      const meta = await readMetaFile(metaPath);
      if (meta.delete(key)) await writeFileAtomic(metaPath, serializeMeta(meta));
      if (!cache.delete(key)) return { path, removed: 0 };
      await writeFileAtomic(path, serializeCache(cache));
      return { path, removed: 1 };
    });
  } catch (err) {
    if (err instanceof CacheLockError || err instanceof CorruptCacheError) throw err;
    throw new CacheWriteError(path, err);
  }
}
