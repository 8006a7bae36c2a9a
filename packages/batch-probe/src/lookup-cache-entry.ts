import { readCacheValue } from './_cache-file';
import { metaPathOf, readMetaEntry } from './_meta-file';
import { positiveInt, string } from './_validate';
import { resolveCachePath } from './resolve-cache-path';
import type { CacheLocationOptions, CacheProvenance } from './types';

/** Options of {@link lookupCacheEntry}: the key and the conditions of the search that would run instead. */
export interface LookupCacheEntryOptions extends CacheLocationOptions {
  /** The cache key (see `makeCacheKey`). */
  key: string;
  /**
   * The budget the answer must meet, in bytes; `null`/absent: no explicit budget (the device's own memory).
   * @default null
   */
  budgetBytes?: number | null;
  /** The largest size the caller would search up to. */
  ceiling: number;
  /**
   * Refuse an answer above `ceiling`. Turn it off when the ceiling is a default rather than the
   * user's cap (as the Python original, which returns a cached answer whatever its size).
   * @default true
   */
  enforceCeiling?: boolean;
}

/** What {@link lookupCacheEntry} found. */
export type LookupCacheEntryResult =
  | {
      hit: true;
      /** The size to use: the cached answer, or the ceiling when the answer is above it (`cappedFrom`). */
      batchSize: number;
      provenance: CacheProvenance | null;
      path: string;
      /**
       * The cached answer, when it was above an enforced `ceiling`: it fits, so every smaller size does (the search's
       * own premise), and the ceiling is this search's answer without a trial.
       */
      cappedFrom?: number;
    }
  | {
      hit: false;
      path: string;
      /** Why an entry that exists was not used; absent when there is none. */
      skipped?: string;
      /**
       * A size known to fit under this search's budget (the entry was found under a stricter one): the search may start
       * there.
       */
      startAt?: number;
    };

/**
 * Looks a key up and says whether its answer holds for this search:
 * - the entry's budget must be the same: an answer found under no budget or a larger one is not
 *   used for a stricter `budgetBytes`, and one found under a stricter budget is not used for a
 *   looser one (a larger size may fit; `startAt` says where a new search can start);
 * - an answer capped by its ceiling is not used when `ceiling` is higher (a larger size may fit);
 *   an exact answer (its next size failed) serves any ceiling at or above it;
 * - an answer above an enforced `ceiling` serves as the ceiling itself (`cappedFrom`): a size that fits says every
 *   smaller one does, so a search capped there has nothing to try.
 * An entry with no provenance (written by the Python original, or its side-file record is
 * missing, corrupt or describes another value) is used only when no `budgetBytes` is given: it
 * was found against the device's own memory, which is all such a lookup asks for.
 */
export async function lookupCacheEntry(options: LookupCacheEntryOptions): Promise<LookupCacheEntryResult> {
  const key = string('key', options.key, true);
  const ceiling = positiveInt('ceiling', options.ceiling);
  const budget = options.budgetBytes ?? null;
  if (budget !== null) positiveInt('budgetBytes', budget);
  const { path } = resolveCachePath(options);
  const value = readCacheValue(path, key);
  if (value === undefined) return { hit: false, path };
  const capped = value > ceiling && options.enforceCeiling !== false;
  const served = (provenance: CacheProvenance | null): LookupCacheEntryResult =>
    capped
      ? { hit: true, batchSize: ceiling, provenance, path, cappedFrom: value }
      : { hit: true, batchSize: value, provenance, path };
  const meta = readMetaEntry(metaPathOf(path), key);
  const p = meta !== undefined && meta.batchSize === value ? meta : null;
  if (p === null) {
    if (budget !== null)
      return {
        hit: false,
        path,
        skipped: `cached ${value} has no provenance, so it cannot be shown to meet the budget of ${budget} bytes`,
      };
    return served(null);
  }
  if (budget !== null && (p.budgetBytes === null || p.budgetBytes > budget)) {
    return {
      hit: false,
      path,
      skipped:
        `cached ${value} was found under ` +
        `${p.budgetBytes === null ? 'no budget' : `a budget of ${p.budgetBytes} bytes`}, looser than ${budget}` +
        ` bytes`,
    };
  }
  if (budget !== null && p.budgetBytes !== null && p.budgetBytes < budget && !capped) {
    // Found under a stricter budget: it fits here too, but a larger size may (up to a ceiling above it); probe again.
    return {
      hit: false,
      path,
      skipped:
        `cached ${value} was found under a stricter budget of ${p.budgetBytes} bytes than ${budget}` +
        ` bytes: probing again from ${value}`,
      startAt: value,
    };
  }
  if (p.bound !== 'exact' && ceiling > p.ceiling && !capped) {
    return {
      hit: false,
      path,
      skipped: `cached ${value} was capped by the ceiling ${p.ceiling}; this search goes up to ${ceiling}`,
    };
  }
  return served(p);
}
