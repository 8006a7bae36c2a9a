import type { TrialRecord } from './types';

/** Stable error codes of @soup/batch-probe. */
export type BatchProbeErrorCode =
  | 'SOUP_OOM'
  | 'SOUP_NO_BATCH_FITS'
  | 'SOUP_BATCH_INVALID_OPTION'
  | 'SOUP_BATCH_INVALID_PROBE_OUTCOME'
  | 'SOUP_BATCH_CACHE_LOCK_TIMEOUT'
  | 'SOUP_BATCH_CACHE_WRITE'
  | 'SOUP_BATCH_CACHE_CORRUPT';

/** Base class of every error @soup/batch-probe throws: a stable `code`, the `cause` kept. */
export class BatchProbeError extends Error {
  override readonly name: string = 'BatchProbeError';
  readonly code: BatchProbeErrorCode;

  constructor(message: string, options: { code: BatchProbeErrorCode; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = options.code;
  }
}

/**
 * The step ran out of memory. Probes throw it (or their own error, recognised through the
 * search's `isOom`); the search counts it as "does not fit" and moves on.
 */
export class OutOfMemoryError extends BatchProbeError {
  override readonly name = 'OutOfMemoryError';
  declare readonly code: 'SOUP_OOM';
  /** The batch size that ran out of memory, when known. */
  readonly batchSize: number | undefined;
  /** Measured peak, in bytes, when known. */
  readonly peakBytes: number | undefined;
  /** The budget that was exceeded, in bytes, when known. */
  readonly budgetBytes: number | undefined;

  constructor(
    message: string,
    options: { batchSize?: number; peakBytes?: number; budgetBytes?: number; cause?: unknown } = {},
  ) {
    super(message, { code: 'SOUP_OOM', cause: options.cause });
    this.batchSize = options.batchSize;
    this.peakBytes = options.peakBytes;
    this.budgetBytes = options.budgetBytes;
  }
}

/** Not even the smallest candidate (1, or `multipleOf`) fits. Carries every trial made. */
export class NoBatchFitsError extends BatchProbeError {
  override readonly name = 'NoBatchFitsError';
  declare readonly code: 'SOUP_NO_BATCH_FITS';
  /** The smallest batch size tried (1, or `multipleOf`). */
  readonly smallestBatchSize: number;
  /** Every trial of the search, in order. */
  readonly trials: TrialRecord[];

  /**
   * @param options.advice what the caller can change, replacing the default advice (a shorter
   *   max_length or a bigger memory budget)
   */
  constructor(smallestBatchSize: number, trials: TrialRecord[], options: { cause?: unknown; advice?: string } = {}) {
    const at =
      smallestBatchSize === 1
        ? 'batch size 1'
        : `batch size ${smallestBatchSize} (the smallest multiple of ${smallestBatchSize} allowed)`;
    super(
      `out of memory at ${at}: the step does not fit this device's memory budget even at the smallest size. ` +
        (options.advice ?? 'Shorten max_length or give the step a bigger memory budget.'),
      { code: 'SOUP_NO_BATCH_FITS', cause: options.cause },
    );
    this.smallestBatchSize = smallestBatchSize;
    this.trials = trials;
  }
}

/** An option or argument is invalid. `field` names it; the message says what is expected. */
export class InvalidBatchOptionError extends BatchProbeError {
  override readonly name = 'InvalidBatchOptionError';
  declare readonly code: 'SOUP_BATCH_INVALID_OPTION';
  /** The offending field, e.g. `start`. */
  readonly field: string;

  constructor(message: string, options: { field: string; cause?: unknown }) {
    super(message, { code: 'SOUP_BATCH_INVALID_OPTION', cause: options.cause });
    this.field = options.field;
  }
}

/** The probe resolved to something that is not a `{fits: boolean}` outcome. */
export class InvalidProbeOutcomeError extends BatchProbeError {
  override readonly name = 'InvalidProbeOutcomeError';
  declare readonly code: 'SOUP_BATCH_INVALID_PROBE_OUTCOME';
  /** The batch size of the offending call. */
  readonly batchSize: number;

  constructor(batchSize: number, got: unknown) {
    super(
      `probe(${batchSize}) resolved to ${describe(got)}; it must resolve to an object {fits: boolean, peakBytes?, ` +
        `budgetBytes?, detail?} ` +
        'or throw (an out-of-memory error counts as "does not fit").',
      { code: 'SOUP_BATCH_INVALID_PROBE_OUTCOME' },
    );
    this.batchSize = batchSize;
  }
}

/** The cache lock could not be taken in time (another writer holds it and is alive). */
export class CacheLockError extends BatchProbeError {
  override readonly name = 'CacheLockError';
  declare readonly code: 'SOUP_BATCH_CACHE_LOCK_TIMEOUT';
  /** The lock file. */
  readonly lockPath: string;

  constructor(lockPath: string, waitedMs: number) {
    super(
      `Could not take the batch cache lock ${lockPath} within ${waitedMs} ms: another soup process holds it. ` +
        'Retry, or delete the lock file if no soup process is running.',
      { code: 'SOUP_BATCH_CACHE_LOCK_TIMEOUT' },
    );
    this.lockPath = lockPath;
  }
}

/** The cache file could not be written or removed (only operations the user asked for directly throw it). */
export class CacheWriteError extends BatchProbeError {
  override readonly name = 'CacheWriteError';
  declare readonly code: 'SOUP_BATCH_CACHE_WRITE';
  /** The cache file. */
  readonly path: string;

  constructor(path: string, cause: unknown) {
    super(`Could not write the batch cache ${path}: ${cause instanceof Error ? cause.message : String(cause)}`, {
      code: 'SOUP_BATCH_CACHE_WRITE',
      cause,
    });
    this.path = path;
  }
}

/**
 * The cache file holds something that is not a JSON object of entries (a torn or hand-edited file). Nothing reads
 * it as empty and nothing overwrites it: its entries may still be recoverable by hand.
 */
export class CorruptCacheError extends BatchProbeError {
  override readonly name = 'CorruptCacheError';
  declare readonly code: 'SOUP_BATCH_CACHE_CORRUPT';
  /** The cache file. */
  readonly path: string;

  constructor(path: string, why: string) {
    super(
      `The batch cache ${path} is corrupt (${why}); it was left as it is. Move it away (mv ${path} ` +
        `${path}.corrupt) or remove it with \`soup cache clear\`, then run again.`,
      { code: 'SOUP_BATCH_CACHE_CORRUPT' },
    );
    this.path = path;
  }
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value !== 'object') return `${typeof value} ${String(value)}`;
  try {
    return JSON.stringify(value).slice(0, 200);
  } catch {
    return 'an unserialisable object';
  }
}
