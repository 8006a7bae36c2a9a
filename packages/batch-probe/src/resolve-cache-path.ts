import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { isWithin, realDirOf, realPathOf } from './_real-path';
import type { CacheLocationOptions } from './types';

/** Where the batch cache lives, and why. */
export interface CachePathInfo {
  /** The cache file to read and write. */
  path: string;
  /** `env` when `SOUP_BATCH_CACHE_PATH` was honoured, else `default` (`~/.soup/batch_cache.json`). */
  source: 'env' | 'default';
  /**
   * The override that was refused because its real path lies outside the home, working and temp
   * directories (or loops through symlinks). Absent when there was none or it was honoured.
   */
  ignoredOverride?: string;
}

/** The environment variable that overrides the cache path. */
export const CACHE_PATH_ENV = 'SOUP_BATCH_CACHE_PATH';

/**
 * Resolves the batch cache path. `SOUP_BATCH_CACHE_PATH` is honoured only when its real path
 * (symlinks followed, `..` resolved, a missing tail kept as written) lies under the real home,
 * working or temp directory; otherwise the default `~/.soup/batch_cache.json` is used, so a
 * poisoned environment cannot turn a cache write into a write anywhere on disk.
 */
export function resolveCachePath(options: CacheLocationOptions = {}): CachePathInfo {
  const env = options.env ?? process.env;
  const home = options.homeDir ?? homedir();
  const cwd = options.cwd ?? process.cwd();
  const fallback = join(home, '.soup', 'batch_cache.json');
  const override = env[CACHE_PATH_ENV];
  if (!override) return { path: fallback, source: 'default' };
  const candidate = realPathOf(override, realDirOf(cwd));
  if (candidate !== undefined) {
    for (const anchor of [home, cwd, options.tmpDir ?? tmpdir()]) {
      if (isWithin(candidate, realDirOf(anchor))) return { path: candidate, source: 'env' };
    }
  }
  return { path: fallback, source: 'default', ignoredOverride: override };
}
