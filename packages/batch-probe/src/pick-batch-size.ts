import { readCacheFile } from './_cache-file';
import { positiveInt } from './_validate';
import { InvalidBatchOptionError } from './errors';
import { makeCacheKey, type CacheKeyFields } from './make-cache-key';
import { probeBatchSize, type ProbeBatchSizeOptions } from './probe-batch-size';
import { resolveCachePath } from './resolve-cache-path';
import { saveCacheEntry } from './save-cache-entry';
import type { BatchLogger, CacheLocationOptions, CacheLockOptions, ProbeFn, TrialRecord } from './types';

/** How {@link pickBatchSize} chooses: the static estimate, or a probe (cached) when one is available. */
export type BatchSizeStrategy = 'static' | 'auto' | 'probe';

const STRATEGIES: readonly BatchSizeStrategy[] = ['static', 'auto', 'probe'];

/** Options of {@link pickBatchSize}: the key fields, the strategy, the probe and the search's knobs. */
export interface PickBatchSizeOptions
  extends CacheKeyFields,
    CacheLocationOptions,
    CacheLockOptions,
    Pick<ProbeBatchSizeOptions, 'maxDoublings' | 'refine' | 'multipleOf' | 'onTrial' | 'signal'> {
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
   * Largest size the search may try.
   * @default 4 * staticEstimate
   */
  ceiling?: number;
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
}

/**
 * The top-level batch picker, as the original `pick_batch_size`: `static` returns the estimate;
 * `auto`/`probe` without a probe return it too (`probe` logs an advisory); otherwise a cache hit
 * returns the cached size without probing, and a miss runs {@link probeBatchSize} from the
 * estimate up to `ceiling` (default 4 × the estimate) and saves the answer (best-effort).
 *
 * @throws {InvalidBatchOptionError} a bad option; {@link NoBatchFitsError} when nothing fits;
 * whatever non-OOM error the probe throws.
 */
export async function pickBatchSize(options: PickBatchSizeOptions): Promise<PickBatchSizeResult> {
  const staticEstimate = positiveInt('staticEstimate', options.staticEstimate);
  if (!STRATEGIES.includes(options.strategy)) {
    throw new InvalidBatchOptionError(
      'strategy',
      `strategy must be one of ${STRATEGIES.map((s) => `'${s}'`).join(', ')} (got ${JSON.stringify(options.strategy) ?? String(options.strategy)})`,
    );
  }
  const logger = options.logger ?? {};
  if (options.strategy === 'static') return { batchSize: staticEstimate, source: 'static', trials: [] };

  if (options.probe === undefined) {
    if (options.strategy === 'probe') {
      logger.warn?.(
        `batch size strategy 'probe' was requested but no probe is available: using the static estimate (${staticEstimate}). ` +
          'This is expected when no step can be run on this device.',
      );
    }
    return { batchSize: staticEstimate, source: 'static', trials: [] };
  }

  const cacheKey = makeCacheKey(options);
  const location = resolveCachePath(options);
  if (location.ignoredOverride !== undefined) {
    logger.warn?.(
      `SOUP_BATCH_CACHE_PATH=${location.ignoredOverride} resolves outside the home, working and temp directories: ignored, using ${location.path}`,
    );
  }
  const cached = (await readCacheFile(location.path)).get(cacheKey);
  if (cached !== undefined) {
    logger.info?.(`batch size ${cached} from the cache (${location.path}, key ${cacheKey})`);
    return { batchSize: cached, source: 'cache', cacheKey, cachePath: location.path, trials: [] };
  }

  const ceiling = options.ceiling ?? staticEstimate * 4;
  const { batchSize, trials } = await probeBatchSize(options.probe, {
    start: staticEstimate,
    ceiling,
    maxDoublings: options.maxDoublings,
    refine: options.refine,
    multipleOf: options.multipleOf,
    isOom: options.isOom,
    onTrial: options.onTrial,
    signal: options.signal,
  });
  const save = await saveCacheEntry({ ...pickLocation(options), key: cacheKey, batchSize });
  if (save.saved) logger.info?.(`batch size ${batchSize} saved to the cache (${save.path})`);
  else logger.warn?.(`could not save batch size ${batchSize} to the cache ${save.path}: ${save.error.message}`);
  return { batchSize, source: 'probe', cacheKey, cachePath: location.path, trials, saved: save.saved };
}

function pickLocation(o: PickBatchSizeOptions): CacheLocationOptions & CacheLockOptions {
  return { env: o.env, homeDir: o.homeDir, cwd: o.cwd, tmpDir: o.tmpDir, lockTimeoutMs: o.lockTimeoutMs, staleLockMs: o.staleLockMs };
}
