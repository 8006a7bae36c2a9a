import { positiveInt } from './_validate';
import { InvalidBatchOptionError } from './errors';
import { lookupCacheEntry } from './lookup-cache-entry';
import { makeCacheKey, type CacheKeyFields } from './make-cache-key';
import { largestDivisorAtMost, perRankBatch } from './divisors';
import { searchBatchSize } from './_pick-search';
import type { ProbeBatchSizeOptions } from './probe-batch-size';
import { resolveCachePath } from './resolve-cache-path';
import { saveCacheEntry } from './save-cache-entry';
import type {
  BatchLogger,
  CacheLocationOptions,
  CacheLockOptions,
  CacheProvenance,
  ProbeFn,
  TrialRecord,
} from './types';

/** How {@link pickBatchSize} chooses: the static estimate, or a probe (cached) when one is available. */
export type BatchSizeStrategy = 'static' | 'auto' | 'probe';

const STRATEGIES: readonly BatchSizeStrategy[] = ['static', 'auto', 'probe'];

/** Options of {@link pickBatchSize}: the key fields, the strategy, the probe and the search's knobs. */
export interface PickBatchSizeOptions
  extends CacheKeyFields,
    CacheLocationOptions,
    CacheLockOptions,
    Pick<ProbeBatchSizeOptions, 'maxDoublings' | 'refine' | 'predict' | 'multipleOf' | 'onTrial' | 'signal'> {
  /** The batch size a formula estimated (a positive integer): the answer for `static`, the search's start otherwise. */
  staticEstimate: number;
  /**
   * `static`: return the estimate. `auto`: probe when a probe is given, else the estimate, silently.
   * `probe`: the same, but warns through `logger` when no probe is given.
   */
  strategy: BatchSizeStrategy;
  /** Runs one step at a batch size; without it the estimate is returned. */
  probe?: ProbeFn | undefined;
  /**
   * Which thrown errors mean out-of-memory.
   * @default isOutOfMemoryError
   */
  isOom?: (err: unknown) => boolean;
  /**
   * Where advisories and cache notes go.
   * @default no logging
   */
  logger?: BatchLogger;
  /**
   * Largest size the search may try. Given explicitly, it also caps a cached answer.
   * @default 4 * staticEstimate
   */
  ceiling?: number;
  /**
   * The memory budget the answer must meet, in bytes, `null` for none (the device's own memory).
   * Recorded in the entry's provenance; a cached answer found under a looser budget is not used.
   * @default null
   */
  budgetBytes?: number | null;
  /**
   * Probe again even when the cache has a usable answer, and overwrite it.
   * @default false
   */
  refresh?: boolean;
  /**
   * Save an answer whose deciding trial was judged `exceptions-only` (no peak measured: only a
   * failure would have refused it). Such answers are what the v2 key keeps out, so by default
   * they are returned but not saved.
   * @default false
   */
  saveExceptionsOnly?: boolean;
  /**
   * The run's global batch G. Given, the answer is a micro-batch m: only divisors of
   * G / `worldSize` are probed (`probeMicroBatchSize`), a cached answer becomes the largest divisor
   * under it, the ceiling defaults to G / worldSize, and the estimate is rounded down to a divisor.
   * @default undefined (any batch size)
   */
  globalBatchSize?: number;
  /** Ranks sharing G (with `globalBatchSize`). @default 1 */
  worldSize?: number;
  /** With `globalBatchSize`: search the divisors from below (see `probeMicroBatchSize`'s `fromBelow`). */
  fromBelow?: { margin: number };
  /** With `globalBatchSize`: see `probeMicroBatchSize`'s `predictStop`. */
  predictStop?: { margin: number };
  /**
   * Fraction of the budget a micro-batch's measured peak must leave free (with `globalBatchSize`; see
   * `probeMicroBatchSize`). @default 0
   */
  headroom?: number;
  /**
   * Content hashes of the files the measured command named, recorded in the provenance (see `CacheProvenance.files`).
   */
  files?: Record<string, string>;
}

/** What {@link pickBatchSize} picked and where the answer came from. */
export interface PickBatchSizeResult {
  /** The batch size to train with (>= 1). */
  batchSize: number;
  /** `static` (the estimate, no probe run), `cache` (a previous probe's answer) or `probe` (searched now). */
  source: 'static' | 'cache' | 'probe';
  /** The cache key, when the cache was consulted. */
  cacheKey?: string;
  /** The cache file, when the cache was consulted. */
  cachePath?: string;
  /** The trials of the search; empty unless `source` is `probe`. */
  trials: TrialRecord[];
  /** With `source: 'probe'`: whether the answer reached the cache (it is best-effort). */
  saved?: boolean;
  /** With `source: 'probe'` and `saved: false`: why not. */
  notSavedReason?: string;
  /**
   * With `source: 'cache'`: how the entry was found, `null` for an entry with no provenance (the Python original's).
   * With `source: 'probe'`: what was saved.
   */
  provenance?: CacheProvenance | null;
  /** A cached entry that exists but was not used, and why. */
  skippedCache?: string;
  /** With `source: 'cache'`: the cached answer, when it was above the ceiling and the ceiling was used instead. */
  cappedFrom?: number;
  /** With `source: 'probe'`: see `ProbeBatchSizeResult.bound`. */
  bound?: 'exact' | 'capped' | 'unproven';
}

/**
 * The top-level batch picker, as the original `pick_batch_size`: `static` returns the estimate;
 * `auto`/`probe` without a probe return it too (`probe` logs an advisory); otherwise a cache hit
 * returns the cached size without probing when it holds for this budget and ceiling (see
 * `lookupCacheEntry`), and a miss runs {@link probeBatchSize} from the estimate up to `ceiling`
 * (default 4 × the estimate) and saves the answer with its provenance (best-effort; an
 * exceptions-only answer only with `saveExceptionsOnly`).
 *
 * @throws {InvalidBatchOptionError} a bad option; {@link NoBatchFitsError} when nothing fits;
 * whatever non-OOM error the probe throws.
 */
export async function pickBatchSize(options: PickBatchSizeOptions): Promise<PickBatchSizeResult> {
  const staticEstimate = positiveInt('staticEstimate', options.staticEstimate);
  if (!STRATEGIES.includes(options.strategy)) {
    throw new InvalidBatchOptionError(
      `strategy must be one of ${STRATEGIES.map((s) => `'${s}'`).join(', ')} (got ` +
        `${JSON.stringify(options.strategy) ?? String(options.strategy)})`,
      { field: 'strategy' },
    );
  }
  const logger = options.logger ?? {};
  const perRank =
    options.globalBatchSize !== undefined ? perRankBatch(options.globalBatchSize, options.worldSize ?? 1) : undefined;
  // With a global batch, every answer is a divisor of G / worldSize (an estimate above it is capped).
  const asMicro = (b: number): number => (perRank === undefined ? b : (largestDivisorAtMost(perRank, b) ?? 1));
  if (options.strategy === 'static') return { batchSize: asMicro(staticEstimate), source: 'static', trials: [] };

  if (options.probe === undefined) {
    if (options.strategy === 'probe') {
      logger.warn?.(
        `batch size strategy 'probe' was requested but no probe is available: using the static estimate (` +
          `${staticEstimate}). ` +
          'This is expected when no step can be run on this device.',
      );
    }
    return { batchSize: asMicro(staticEstimate), source: 'static', trials: [] };
  }

  const cacheKey = makeCacheKey(options);
  const location = resolveCachePath(options);
  if (location.ignoredOverride !== undefined) {
    logger.warn?.(
      `SOUP_BATCH_CACHE_PATH=${location.ignoredOverride} resolves outside the home, working and temp directories: ` +
        `ignored, using ${location.path}`,
    );
  }
  const ceiling = options.ceiling ?? perRank ?? staticEstimate * 4;
  const budgetBytes = options.budgetBytes ?? null;
  let skippedCache: string | undefined;
  let start = staticEstimate;
  if (options.refresh !== true) {
    const hit = await lookupCacheEntry({
      ...pickLocation(options),
      key: cacheKey,
      ceiling,
      budgetBytes,
      enforceCeiling: options.ceiling !== undefined,
    });
    if (hit.hit) {
      const capped = hit.cappedFrom === undefined ? '' : `; the cache's ${hit.cappedFrom} fits, capped by the ceiling`;
      logger.info?.(`batch size ${hit.batchSize} from the cache (${location.path}, key ${cacheKey}${capped})`);
      // A cached size fits; with a global batch the largest divisor under it is the micro-batch.
      return {
        batchSize: asMicro(hit.batchSize),
        source: 'cache',
        cacheKey,
        cachePath: location.path,
        trials: [],
        provenance: hit.provenance,
        ...(hit.cappedFrom === undefined ? {} : { cappedFrom: hit.cappedFrom }),
      };
    }
    skippedCache = hit.skipped;
    if (skippedCache !== undefined) logger.info?.(`not using the cache entry ${cacheKey}: ${skippedCache}`);
    // An answer found under a stricter budget fits under this looser one: the search starts there.
    if (hit.startAt !== undefined && hit.startAt <= ceiling) start = Math.max(1, hit.startAt);
  }

  const searched = await searchBatchSize(options.probe, options, start, ceiling);
  const { batchSize, trials, bound } = searched;
  const deciding = trials.filter((t) => t.batchSize === batchSize && t.fits).at(-1);
  const measurement = deciding?.measurement ?? 'unknown';
  // A fit the probe doubted (the trainer printed an out-of-memory error and exited 0) proves no
  // edge: such an answer is saved as capped at itself, so any search that may go higher probes again.
  const doubt = trials.find((t) => t.fits && typeof t.warning === 'string' && t.batchSize <= batchSize);
  const savedBound = doubt !== undefined && bound === 'exact' ? 'capped' : bound;
  const provenance: CacheProvenance = {
    batchSize,
    base: options.base,
    maxLength: options.maxLength,
    quantization: options.quantization,
    loraR: options.loraR,
    gpuName: options.gpuName,
    gpuMemoryGb: options.gpuMemoryGb,
    budgetBytes,
    ceiling: doubt !== undefined ? batchSize : ceiling,
    bound: savedBound,
    measurement,
    savedAt: new Date().toISOString(),
    ...(options.files !== undefined ? { files: options.files } : {}),
  };
  if (doubt !== undefined) logger.warn?.(`batch size ${doubt.batchSize}: ${doubt.warning}`);
  const base = {
    batchSize,
    source: 'probe' as const,
    cacheKey,
    cachePath: location.path,
    trials,
    provenance,
    bound,
    ...(skippedCache !== undefined ? { skippedCache } : {}),
  };
  if (measurement === 'exceptions-only' && options.saveExceptionsOnly !== true) {
    const notSavedReason = 'the deciding trial measured no peak (exceptions only): not cached unless asked';
    logger.warn?.(`batch size ${batchSize} not saved to the cache: ${notSavedReason}`);
    return { ...base, saved: false, notSavedReason };
  }
  if (measurement === 'not-measured') {
    const notSavedReason =
      `the deciding trial was not measured on this GPU (` + `${deciding?.detail ?? 'the trainer ran elsewhere'})`;
    logger.warn?.(`batch size ${batchSize} not saved to the cache: ${notSavedReason}`);
    return { ...base, saved: false, notSavedReason };
  }
  if (provenance.bound !== 'exact') {
    // A capped (or unproven) answer never replaces an exact one for the same key.
    const existing = await lookupCacheEntry({
      ...pickLocation(options),
      key: cacheKey,
      ceiling: Number.MAX_SAFE_INTEGER,
      enforceCeiling: false,
    });
    if (existing.hit && existing.provenance?.bound === 'exact') {
      const notSavedReason =
        `the cache holds an exact answer (${existing.batchSize}) for this key; a ` +
        `${provenance.bound} ${batchSize} does not replace it`;
      logger.info?.(`batch size ${batchSize} not saved: ${notSavedReason}`);
      return { ...base, saved: false, notSavedReason };
    }
  }
  const save = await saveCacheEntry({ ...pickLocation(options), key: cacheKey, batchSize, provenance });
  if (save.saved) logger.info?.(`batch size ${batchSize} saved to the cache (${save.path})`);
  else logger.warn?.(`could not save batch size ${batchSize} to the cache ${save.path}: ${save.error.message}`);
  return { ...base, saved: save.saved, ...(save.saved ? {} : { notSavedReason: save.error.message }) };
}

function pickLocation(o: PickBatchSizeOptions): CacheLocationOptions & CacheLockOptions {
  return {
    env: o.env,
    homeDir: o.homeDir,
    cwd: o.cwd,
    tmpDir: o.tmpDir,
    lockTimeoutMs: o.lockTimeoutMs,
    staleLockMs: o.staleLockMs,
  };
}
