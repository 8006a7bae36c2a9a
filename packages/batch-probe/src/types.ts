/** What one trial of a candidate batch size reports back to the search. */
export interface ProbeOutcome {
  /**
   * Whether the step ran within the memory budget. `false` is a refusal from a peak gate
   * (the step completed but its measured peak went over the budget): the search treats it
   * exactly like an out-of-memory error.
   */
  fits: boolean;
  /** Measured peak memory of the step, in bytes, when the probe could measure it. */
  peakBytes?: number;
  /** Memory the step was allowed to reach, in bytes, when the probe knows it. */
  budgetBytes?: number;
  /** Free-form note for humans (device, reason of a refusal, ...). */
  detail?: string;
  /** What judged this trial (e.g. `peak-rss`, `cuda-per-process`, `exceptions-only`), when the probe says. */
  measurement?: string;
  /**
   * The trial did not run to its end (stopped at the budget, killed, out of memory, or it took all
   * free memory): `peakBytes` is only a lower bound of what the step needed ("more than the
   * budget"). The predictive search uses such a trial as a bound, never as a point of its fit.
   */
  censored?: boolean;
  /**
   * The probe stops (or loses) a failing trial at the budget, so its failures are censored: the
   * predictive search then takes a doubling for its second point rather than a trial at the
   * ceiling, whose failure would say only "the edge is below".
   */
  censorsFailures?: boolean;
  /**
   * Something that makes a fit doubtful (e.g. the trainer exited 0 but printed an out-of-memory
   * error): an answer that rests on such a trial is cached only as `capped`, never as `exact`.
   */
  warning?: string;
}

/**
 * Runs one training step (or anything standing for it) at `batchSize`. Resolves to a
 * {@link ProbeOutcome}; may throw. A thrown error counts as out-of-memory only when the
 * search's `isOom(err)` says so, any other error propagates unchanged.
 */
export type ProbeFn = (batchSize: number) => Promise<ProbeOutcome>;

/** Which part of the search a trial belongs to. */
export type TrialPhase = 'halve' | 'double' | 'refine' | 'predict';

/** One call of the probe, as the search saw it. Plain data: safe to `JSON.stringify`. */
export interface TrialRecord {
  /** 1-based position of this trial in the search. */
  index: number;
  /** The candidate batch size the probe was called with. */
  batchSize: number;
  /**
   * `halve` (first trial and the way down), `double` (the way up), `refine` (bisection) or `predict` (a predicted edge
   * and its confirmation).
   */
  phase: TrialPhase;
  /** Whether the candidate fitted. */
  fits: boolean;
  /** `fit`, `not-fit` (the probe resolved `fits: false`) or `oom` (the probe threw an OOM error). */
  result: 'fit' | 'not-fit' | 'oom';
  /** From the probe's outcome, when it gave one. */
  peakBytes?: number;
  /** From the probe's outcome, when it gave one. */
  budgetBytes?: number;
  /** The outcome's `detail`, or the OOM error's message. */
  detail?: string;
  /** From the probe's outcome, when it gave one. */
  measurement?: string;
  /** The peak is a lower bound only (see `ProbeOutcome.censored`); always true for a thrown OOM error. */
  censored?: boolean;
  /** From the probe's outcome, when it gave one. */
  warning?: string;
  /** From the probe's outcome, when it gave one. */
  censorsFailures?: boolean;
  /** Wall time of the probe call, in milliseconds. */
  ms: number;
}

/** Where log lines go. Every method is optional; nothing is logged by default. */
export interface BatchLogger {
  info?: (message: string) => void;
  warn?: (message: string) => void;
}

/**
 * Where the batch cache lives. The path is `~/.soup/batch_cache.json` unless the environment's
 * `SOUP_BATCH_CACHE_PATH` resolves (real path, symlinks followed) under the home directory, the
 * working directory or the temp directory. Every field is injectable for tests and tools.
 */
export interface CacheLocationOptions {
  /**
   * Environment read for `SOUP_BATCH_CACHE_PATH`.
   * @default process.env
   */
  env?: Record<string, string | undefined>;
  /**
   * Home directory: holds the default cache and anchors the override.
   * @default os.homedir()
   */
  homeDir?: string;
  /**
   * Working directory: resolves a relative override and anchors it.
   * @default process.cwd()
   */
  cwd?: string;
  /**
   * Temp directory: anchors the override.
   * @default os.tmpdir()
   */
  tmpDir?: string;
}

/** Options of the cross-process lock that guards every cache write. */
export interface CacheLockOptions {
  /**
   * How long a writer waits for the lock before giving up.
   * @default 15000
   */
  lockTimeoutMs?: number;
  /**
   * Age after which a lock file counts as abandoned and is broken, whatever its owner. A lock
   * whose owner process (same host) is gone is broken at once.
   * @default 10000
   */
  staleLockMs?: number;
}

/** One entry of the batch cache. */
export interface CacheEntry {
  /** 32 hex characters, see {@link makeCacheKey}. */
  key: string;
  /** The cached batch size (a positive integer). */
  batchSize: number;
  /**
   * How it was found, from the side file; absent for an entry the Python original wrote (or a missing/stale side file).
   */
  provenance?: CacheProvenance;
}

/**
 * How a cached answer was found, kept in the side file beside the cache (never in the file the
 * Python original reads). Written by soup; an entry the Python original wrote has none.
 */
export interface CacheProvenance {
  /**
   * The answer this provenance belongs to: when the main file holds another value (the Python tool overwrote it), the
   * provenance is stale and ignored.
   */
  batchSize: number;
  base: string;
  maxLength: number;
  quantization?: string;
  loraR?: number;
  gpuName: string;
  gpuMemoryGb?: number;
  /** The memory budget of the search in bytes, `null` when none was given (the device's own memory bounded it). */
  budgetBytes: number | null;
  /** The largest size the search was allowed to try. */
  ceiling: number;
  /**
   * `exact`: `batchSize + multipleOf` was seen not to fit. `capped`: `batchSize` is the ceiling and
   * nothing above was tried (a higher ceiling may find more). `unproven`: neither (refine off).
   */
  bound: 'exact' | 'capped' | 'unproven';
  /**
   * What judged the trial at `batchSize` (`peak-rss`, `sampled-rss`, `cuda-per-process`, `cuda-device-delta`,
   * `exceptions-only`, or `unknown`).
   */
  measurement: string;
  /** ISO time of the save. */
  savedAt: string;
  /**
   * Short content hashes (first 12 hex of sha256) of the files the measured command named (its script, its config),
   * by the argument that named them, and of the sources it may import, by path; `base` holds the named ones and a
   * digest of the sources, so an edited trainer or module has another key.
   */
  files?: Record<string, string>;
  /**
   * Why the entry holds this value when a search did not find it, e.g. `mid-run OOM at step 120 (micro 16 failed;
   * stepped down to 8)`.
   */
  note?: string;
}
