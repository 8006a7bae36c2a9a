// A file beside the batch cache written as the batch cache is: under its lock file, replaced atomically.
// The tune cache (@soup/tune) keeps its entries this way, so two writers never lose each other's.
import { writeFileAtomic } from './_cache-file';
import { withLock } from './_lock';
import { lockOptionsOf } from './_lock-options';
import type { CacheLockOptions } from './types';

/**
 * Replaces the file at `path` with the text `next()` returns, computed while `<path>.lock` is held
 * (a read-modify-write by every writer on the machine, one at a time), written atomically (a temp
 * file renamed over it, mode 0600). Throws CacheLockError when the lock is not had in time.
 */
export async function writeCacheFileLocked(
  path: string,
  next: () => string,
  options: CacheLockOptions = {},
): Promise<void> {
  await withLock(`${path}.lock`, lockOptionsOf(options), async () => {
    await writeFileAtomic(path, next());
  });
}
