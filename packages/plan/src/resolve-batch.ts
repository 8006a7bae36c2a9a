// Batch-size resolution shared by probe, plan, train and run: the cache, or live trials, each reported as an event
// (the caller draws the progress and the lines).
import {
  flatPeak,
  type FlatPeak,
  makeCacheKey,
  NoBatchFitsError,
  pickBatchSize,
  probeBatchSize,
  probeMicroBatchSize,
  type CacheProvenance,
  type PickBatchSizeResult,
  type TrialRecord,
} from '@soup/batch-probe';
import type { ChildProbeFn, ProbeTrialOutcome } from '@soup/cuda-probe';

/** One trial as soup shows it (and puts in --json). */
export interface TrialView {
  batch_size: number;
  phase: string;
  result: 'fit' | 'over-budget' | 'oom' | 'killed' | 'not-fit';
  peak_bytes: number | null;
  budget_bytes: number | null;
  ms: number;
  detail: string | null;
  /** What judged the trial: peak-rss, sampled-rss, cuda-per-process, cuda-device-delta, exceptions-only. */
  measurement?: string | null;
  /** A doubt about a fit (e.g. the trainer printed an out-of-memory error and exited 0), when the probe raised one. */
  warning?: string;
  /**
   * The child's own wall time as the probe measured it (spawn to exit), when it reported one: what `--try` times runs
   * by.
   */
  run_ms?: number;
  /**
   * The span of the child's output (first chunk to last), when it printed: what `--try` times runs by where it agrees
   * with `run_ms`.
   */
  run_output_span_ms?: number;
  /** Commands: the characters the trial printed (stdout and stderr). */
  run_output_chars?: number;
}

/** What {@link resolveBatch} reports while it works, in order: `start`, then trials, then `done` or `failed`. */
export type BatchEvent =
  /** A search (or a cache lookup) begins. */
  | { type: 'start' }
  /** A trial of `batchSize` begins: `done` trials are behind it, about `expected` in all. */
  | { type: 'trial-start'; batchSize: number; done: number; expected: number }
  /** A trial ended: `done` counts it. */
  | { type: 'trial'; trial: TrialView; done: number; expected: number }
  /** A note of the batch cache: a warning (e.g. an answer not saved), or why an entry was not used. */
  | { type: 'note'; level: 'warn' | 'info'; line: string }
  /** A size was probed (`batchSize`), or none was (null: it came from the cache or the static estimate). */
  | { type: 'done'; batchSize: number | null }
  /**
   * The search failed; `stderrTail`: the last lines of the failing trial's output, when it failed for a reason
   * other than memory.
   */
  | { type: 'failed'; stderrTail: { stream: 'stdout' | 'stderr'; lines: string[] } | null };

/** Where a search runs: its environment and folder (the batch cache's location), and its stop. */
export interface PlanIo {
  env: NodeJS.ProcessEnv;
  cwd: string;
  signal: AbortSignal;
}

/** Options of {@link resolveBatch}. */
export interface ResolveBatchOptions extends PlanIo {
  /** Called with every step of the search (the caller shows it). */
  onEvent?: (e: BatchEvent) => void;
  /** The probe (one real step per candidate, in a child). */
  probe: ChildProbeFn;
  /** Cache key fields. */
  key: { base: string; maxLength: number; quantization: string; loraR: number; gpuName: string; gpuMemoryGb: number };
  /** First size tried. */
  start: number;
  /** Largest size tried. @default 4 × start */
  ceiling?: number;
  /** Neither read nor write the cache. */
  noCache: boolean;
  /**
   * Why the key cannot name what is measured (a trainer's sources unknown): then the cache is neither read nor
   * written, and the answer's `notSavedReason` says so. @default null
   */
  keyUnknown?: string | null;
  /** static | auto | probe. @default 'probe' */
  strategy?: 'static' | 'auto' | 'probe';
  /**
   * The explicit memory budget (bytes), recorded with the cached answer and required of a cached one; null: the
   * device's own. @default null
   */
  budgetBytes?: number | null;
  /** Probe again even when the cache has an answer, and overwrite it. @default false */
  refresh?: boolean;
  /** Cache an answer whose deciding trial measured no peak (exceptions only). @default false */
  saveExceptionsOnly?: boolean;
  /**
   * Predictive search (fit the measured peaks, jump to the edge); false also turns off `fromBelow` and `predictStop`,
   * a plain bisection over the divisors of G (--no-predict). @default false
   */
  predict?: boolean;
  /** What soup can change here when nothing fits, shown with the error (one line). */
  advice?: string;
  /** The global batch G: the answer is a micro-batch, a divisor of G (only divisors are probed). */
  globalBatchSize?: number;
  /**
   * Where the user set G, as messages name it (`training.batch_size` for a soup.yaml). @default
   * '--global-batch-size'
   */
  globalBatchName?: string;
  /** Ranks sharing G (with `globalBatchSize`): only divisors of G / worldSize are probed. @default 1 */
  worldSize?: number;
  /** Fraction of the budget a trial's measured peak must leave free (with `globalBatchSize`). @default 0 */
  headroom?: number;
  /** The caller reports why an answer was not cached (its summary line): no separate warning for it. @default false */
  reportsNotSaved?: boolean;
  /** Content hashes of the files an --exec command named, kept in the cache's provenance. */
  files?: Record<string, string>;
  /**
   * Search only above this micro-batch (with `globalBatchSize`; the cache is neither read nor
   * written, since "nothing above the floor fits" is not the answer an entry holds). @default 0
   */
  floor?: number;
  /** With `globalBatchSize`: search the divisors from below, predicting the edge (see probeMicroBatchSize). */
  fromBelow?: { margin: number };
  /**
   * With `globalBatchSize`: do not try a divisor the fits' peaks put this far over the budget (see
   * probeMicroBatchSize).
   */
  predictStop?: { margin: number };
}

/** What {@link resolveBatch} found. */
export interface BatchResolution {
  batchSize: number;
  source: 'static' | 'cache' | 'probe';
  cacheKey: string;
  cachePath: string | null;
  trials: TrialView[];
  /** The trial outcome at the chosen size, when it was probed in this run. */
  chosen: TrialView | null;
  /**
   * How the cached answer was found (source cache), or what was saved (source probe); null for an entry with no
   * provenance.
   */
  provenance: CacheProvenance | null;
  /** A cached entry that exists but was not used, and why. */
  skippedCache: string | null;
  /** Source cache: the cached answer, when it was above the ceiling and the ceiling was used instead. */
  cappedFrom: number | null;
  /** Source probe: whether the answer was cached, and why not. */
  saved: boolean | null;
  notSavedReason: string | null;
  /** Why the cache was passed over: the key cannot name what was measured (`keyUnknown`); null otherwise. */
  keyUnknown: string | null;
  /** The fits' peaks stayed flat as the size grew (a trainer that ignores it): the warning, also sent as a note. */
  flatPeak: FlatPeak | null;
}

function view(o: ProbeTrialOutcome | undefined, t: TrialRecord): TrialView {
  // The search refused a trial the probe found to fit (--headroom): its record says why.
  const refused = o?.reason === 'fit' && !t.fits;
  return {
    batch_size: t.batchSize,
    phase: t.phase,
    result: refused ? 'not-fit' : (o?.reason ?? (t.result === 'fit' ? 'fit' : t.result === 'oom' ? 'oom' : 'not-fit')),
    peak_bytes: o?.peakBytes ?? t.peakBytes ?? null,
    budget_bytes: o?.budgetBytes ?? t.budgetBytes ?? null,
    ms: Math.round(t.ms),
    detail: (refused ? t.detail : o?.detail) ?? t.detail ?? null,
    measurement: o?.measurement ?? t.measurement ?? null,
    ...((o?.warning ?? t.warning) !== undefined ? { warning: (o?.warning ?? t.warning)! } : {}),
    ...(typeof o?.ms === 'number' ? { run_ms: o.ms } : {}),
    ...(typeof o?.outputSpanMs === 'number' ? { run_output_span_ms: o.outputSpanMs } : {}),
    ...(typeof o?.outputChars === 'number' ? { run_output_chars: o.outputChars } : {}),
  };
}

const STDERR_LINES = 20;

/** The last lines of the trainer's output, when a trial failed for a reason other than memory. */
function stderrTailOf(err: unknown): { stream: 'stdout' | 'stderr'; lines: string[] } | null {
  const tail = (err as { stderrTail?: unknown } | null)?.stderrTail;
  if (typeof tail !== 'string' || tail.trim() === '') return null;
  const lines = tail.replace(/\s+$/, '').split('\n').slice(-STDERR_LINES);
  // The tail comes from stdout when the trainer wrote nothing on stderr: say which.
  const stream = (err as { tailSource?: unknown }).tailSource === 'stdout' ? 'stdout' : 'stderr';
  return { stream, lines };
}

/** With a global batch: which divisors were tried, and the largest size that fit when only --headroom refused it. */
function noDivisorFits(G: number, N: number, trials: readonly TrialRecord[], name: string): string {
  const tried = [...new Set(trials.map((t) => t.batchSize))].sort((a, b) => b - a);
  const held = trials
    .filter((t) => t.result === 'not-fit' && /headroom/.test(t.detail ?? ''))
    .sort((a, b) => b.batchSize - a.batchSize)[0];
  const what = N === 1 ? `${name} ${G}` : `G / world size = ${G / N}`;
  return held
    ? `No divisor of ${what} fits with its headroom (tried ${tried.join(', ')}): the largest size that fit is ` +
        `${held.batchSize}, refused because ${held.detail}; lower --headroom, or free memory.`
    : `No divisor of ${what} fits (tried ${tried.join(', ')}): no size fit at all.`;
}

/** Finds the batch size: from the cache, or by probing (each trial reported as it runs), then caches it. */
export async function resolveBatch(given: ResolveBatchOptions): Promise<BatchResolution> {
  const opts = given.keyUnknown ? { ...given, noCache: true } : given;
  const emit = opts.onEvent ?? ((): void => {});
  const outcomes = new Map<number, ProbeTrialOutcome>();
  const trials: TrialView[] = [];
  const ceiling =
    opts.ceiling ??
    (opts.globalBatchSize !== undefined ? opts.globalBatchSize / (opts.worldSize ?? 1) : opts.start * 4);
  const expected = Math.max(2, Math.ceil(Math.log2(Math.max(2, ceiling / Math.max(1, opts.start)))) + 2);
  emit({ type: 'start' });
  let n = 0;
  const probe: ChildProbeFn = async (batchSize) => {
    // The live line names the batch being tried now, for as long as its step runs.
    emit({ type: 'trial-start', batchSize, done: n, expected: Math.max(expected, n + 1) });
    const o = await opts.probe(batchSize);
    outcomes.set(batchSize, o);
    return o;
  };
  const onTrial = (t: TrialRecord): void => {
    n += 1;
    const v = view(outcomes.get(t.batchSize), t);
    trials.push(v);
    emit({ type: 'trial', trial: v, done: n, expected: Math.max(expected, n) });
  };
  const cacheKey = makeCacheKey(opts.key);
  let result: PickBatchSizeResult | { batchSize: number; source: 'probe'; cachePath?: string };
  const predict = opts.predict ?? false;
  // --no-predict: the divisors bisected, without the line through the peaks (fromBelow, predictStop use it).
  const fromBelow = opts.predict === false ? undefined : opts.fromBelow;
  const predictStop = opts.predict === false ? undefined : opts.predictStop;
  try {
    if ((opts.noCache || opts.floor) && opts.globalBatchSize !== undefined) {
      const r = await probeMicroBatchSize(probe, {
        ...(opts.floor ? { floor: opts.floor } : {}),
        ...(fromBelow ? { fromBelow } : {}),
        ...(predictStop ? { predictStop } : {}),
        globalBatchSize: opts.globalBatchSize,
        ...(opts.worldSize !== undefined ? { worldSize: opts.worldSize } : {}),
        start: opts.start,
        ceiling,
        ...(opts.headroom ? { headroom: opts.headroom } : {}),
        onTrial,
        signal: opts.signal,
      });
      result = { batchSize: r.microBatchSize, source: 'probe' };
    } else if (opts.noCache) {
      const r = await probeBatchSize(probe, { start: opts.start, ceiling, onTrial, signal: opts.signal, predict });
      result = { batchSize: r.batchSize, source: 'probe' };
    } else {
      result = await pickBatchSize({
        ...opts.key,
        staticEstimate: opts.start,
        strategy: opts.strategy ?? 'probe',
        probe,
        ceiling,
        onTrial,
        signal: opts.signal,
        env: opts.env,
        cwd: opts.cwd,
        predict,
        budgetBytes: opts.budgetBytes ?? null,
        ...(opts.refresh ? { refresh: true } : {}),
        ...(opts.saveExceptionsOnly ? { saveExceptionsOnly: true } : {}),
        ...(opts.globalBatchSize !== undefined ? { globalBatchSize: opts.globalBatchSize } : {}),
        ...(opts.worldSize !== undefined ? { worldSize: opts.worldSize } : {}),
        ...(opts.headroom ? { headroom: opts.headroom } : {}),
        ...(fromBelow ? { fromBelow } : {}),
        ...(predictStop ? { predictStop } : {}),
        ...(opts.files ? { files: opts.files } : {}),
        logger: {
          warn: (line) =>
            opts.reportsNotSaved && / not saved to the cache: /.test(line)
              ? undefined
              : emit({ type: 'note', level: 'warn', line }),
          info: (line) =>
            line.startsWith('not using the cache entry') ? emit({ type: 'note', level: 'info', line }) : undefined,
        },
      });
    }
  } catch (err) {
    emit({ type: 'failed', stderrTail: stderrTailOf(err) });
    if (err instanceof NoBatchFitsError && (opts.advice || opts.globalBatchSize !== undefined)) {
      const name = opts.globalBatchName ?? '--global-batch-size';
      const divisors =
        opts.globalBatchSize !== undefined
          ? `${noDivisorFits(opts.globalBatchSize, opts.worldSize ?? 1, err.trials, name)} `
          : '';
      throw new NoBatchFitsError(err.smallestBatchSize, err.trials, {
        cause: err,
        advice: `${divisors}${opts.advice ?? ''}`.trim(),
      });
    }
    throw err;
  }
  const flat = flatPeak(
    trials.map((t) => ({ batchSize: t.batch_size, fits: t.result === 'fit', peakBytes: t.peak_bytes ?? undefined })),
    opts.globalBatchSize !== undefined ? 'micro-batch' : 'batch size',
  );
  if (flat) emit({ type: 'note', level: 'warn', line: flat.warning });
  emit({ type: 'done', batchSize: result.source === 'probe' ? result.batchSize : null });
  const chosen = trials.filter((t) => t.batch_size === result.batchSize && t.result === 'fit').pop() ?? null;
  const picked = result as Partial<PickBatchSizeResult>;
  return {
    batchSize: result.batchSize,
    source: result.source,
    cacheKey,
    cachePath: result.cachePath ?? null,
    trials,
    chosen,
    provenance: picked.provenance ?? null,
    skippedCache: picked.skippedCache ?? null,
    cappedFrom: picked.cappedFrom ?? null,
    saved: opts.noCache || opts.floor ? false : (picked.saved ?? null),
    notSavedReason: given.keyUnknown ? given.keyUnknown : (picked.notSavedReason ?? null),
    keyUnknown: given.keyUnknown ?? null,
    flatPeak: flat,
  };
}
