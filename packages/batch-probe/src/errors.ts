import type { TrialRecord } from './types';

/**
 * The step ran out of memory. Probes throw it (or their own error, recognised through the
 * search's `isOom`); the search counts it as "does not fit" and moves on.
 */
export class OutOfMemoryError extends Error {
  override readonly name = 'OutOfMemoryError';
  readonly code = 'SOUP_OOM' as const;
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
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.batchSize = options.batchSize;
    this.peakBytes = options.peakBytes;
    this.budgetBytes = options.budgetBytes;
  }
}

/** Not even the smallest candidate (1, or `multipleOf`) fits. Carries every trial made. */
export class NoBatchFitsError extends Error {
  override readonly name = 'NoBatchFitsError';
  readonly code = 'SOUP_NO_BATCH_FITS' as const;
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
      `Out of memory at ${at}: the step does not fit this device's memory budget even at the smallest size. ` +
        (options.advice ?? 'Shorten max_length or give the step a bigger memory budget.'),
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.smallestBatchSize = smallestBatchSize;
    this.trials = trials;
  }
}

/** An option or argument is invalid. `field` names it; the message says what is expected. */
export class InvalidBatchOptionError extends Error {
  override readonly name = 'InvalidBatchOptionError';
  readonly code = 'SOUP_BATCH_INVALID_OPTION' as const;
  /** The offending field, e.g. `start`. */
  readonly field: string;

  constructor(field: string, message: string) {
    super(message);
    this.field = field;
  }
}

/** The probe resolved to something that is not a `{fits: boolean}` outcome. */
export class InvalidProbeOutcomeError extends Error {
  override readonly name = 'InvalidProbeOutcomeError';
  readonly code = 'SOUP_BATCH_INVALID_PROBE_OUTCOME' as const;
  /** The batch size of the offending call. */
  readonly batchSize: number;

  constructor(batchSize: number, got: unknown) {
    super(
      `probe(${batchSize}) resolved to ${describe(got)}; it must resolve to an object {fits: boolean, peakBytes?, budgetBytes?, detail?} ` +
        'or throw (an out-of-memory error counts as "does not fit").',
    );
    this.batchSize = batchSize;
  }
}

/** The cache lock could not be taken in time (another writer holds it and is alive). */
export class CacheLockError extends Error {
  override readonly name = 'CacheLockError';
  readonly code = 'SOUP_BATCH_CACHE_LOCK_TIMEOUT' as const;
  /** The lock file. */
  readonly lockPath: string;

  constructor(lockPath: string, waitedMs: number) {
    super(
      `Could not take the batch cache lock ${lockPath} within ${waitedMs} ms: another soup process holds it. ` +
        'Retry, or delete the lock file if no soup process is running.',
    );
    this.lockPath = lockPath;
  }
}

/** The cache file could not be written or removed (only operations the user asked for directly throw it). */
export class CacheWriteError extends Error {
  override readonly name = 'CacheWriteError';
  readonly code = 'SOUP_BATCH_CACHE_WRITE' as const;
  /** The cache file. */
  readonly path: string;

  constructor(path: string, cause: unknown) {
    super(`Could not write the batch cache ${path}: ${cause instanceof Error ? cause.message : String(cause)}`, {
      cause,
    });
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
