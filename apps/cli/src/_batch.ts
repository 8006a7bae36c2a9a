// Batch-size resolution shared by probe, plan and train: cache, live trials, progress.
import {
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
import type { CommandContext } from './_context';
import { formatBytes } from './format-bytes';
import { formatDuration } from './progress';

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
}

/** Options of {@link resolveBatch}. */
export interface ResolveBatchOptions {
  ctx: CommandContext;
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
  /** static | auto | probe. @default 'probe' */
  strategy?: 'static' | 'auto' | 'probe';
  /** Label of the progress bar. */
  label?: string;
  /**
   * The explicit memory budget (bytes), recorded with the cached answer and required of a cached one; null: the
   * device's own. @default null
   */
  budgetBytes?: number | null;
  /** Probe again even when the cache has an answer, and overwrite it. @default false */
  refresh?: boolean;
  /** Cache an answer whose deciding trial measured no peak (exceptions only). @default false */
  saveExceptionsOnly?: boolean;
  /** Predictive search (fit the measured peaks, jump to the edge). @default false */
  predict?: boolean;
  /** What soup can change here when nothing fits, shown with the error (one line). */
  advice?: string;
  /** The global batch G: the answer is a micro-batch, a divisor of G (only divisors are probed). */
  globalBatchSize?: number;
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
  /** Source probe: whether the answer was cached, and why not. */
  saved: boolean | null;
  notSavedReason: string | null;
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
  };
}

const STDERR_LINES = 20;

/** The last lines of the trainer's stderr, when a trial failed for a reason other than memory. */
function showStderrTail(ctx: CommandContext, err: unknown): void {
  const tail = (err as { stderrTail?: unknown } | null)?.stderrTail;
  if (typeof tail !== 'string' || tail.trim() === '') return;
  const lines = tail.replace(/\s+$/, '').split('\n').slice(-STDERR_LINES);
  // The tail comes from stdout when the trainer wrote nothing on stderr: say which.
  const stream = (err as { tailSource?: unknown }).tailSource === 'stdout' ? 'stdout' : 'stderr';
  ctx.stderr.write(
    `--- last ${lines.length} line${lines.length === 1 ? '' : 's'} of the trial's ${stream} ---\n` +
      `${lines.join('\n')}\n---\n`,
  );
}

/** A human line for one trial: size, verdict, peak vs budget, time. */
export function trialLine(t: TrialView, ctx: CommandContext): string {
  const verdict =
    t.result === 'fit'
      ? ctx.style.green('fits')
      : t.result === 'over-budget'
        ? ctx.style.yellow('over budget')
        : t.result === 'not-fit' && t.detail !== null && /headroom/.test(t.detail)
          ? ctx.style.yellow('over the headroom')
          : ctx.style.red(t.result === 'killed' ? 'OOM (killed)' : 'OOM');
  const peak =
    t.peak_bytes !== null || t.budget_bytes !== null
      ? `  peak ${formatBytes(t.peak_bytes)} / budget ${formatBytes(t.budget_bytes)}`
      : '';
  const notMeasured = t.measurement === 'not-measured' && t.detail ? `  ${ctx.style.yellow(t.detail)}` : '';
  const warning = t.warning ? `\n    ${ctx.style.yellow(`warning: ${t.warning}`)}` : '';
  return (
    `  batch ${String(t.batch_size).padStart(4)}  ${verdict}${peak}  ${ctx.style.dim(formatDuration(t.ms))}` +
    `${notMeasured}${warning}`
  );
}

/** With a global batch: which divisors were tried, and the largest size that fit when only --headroom refused it. */
function noDivisorFits(G: number, N: number, trials: readonly TrialRecord[]): string {
  const tried = [...new Set(trials.map((t) => t.batchSize))].sort((a, b) => b - a);
  const held = trials
    .filter((t) => t.result === 'not-fit' && /headroom/.test(t.detail ?? ''))
    .sort((a, b) => b.batchSize - a.batchSize)[0];
  const what = N === 1 ? `--global-batch-size ${G}` : `G / world size = ${G / N}`;
  return held
    ? `No divisor of ${what} fits with its headroom (tried ${tried.join(', ')}): the largest size that fit is ` +
        `${held.batchSize}, refused because ${held.detail}; lower --headroom, or free memory.`
    : `No divisor of ${what} fits (tried ${tried.join(', ')}): no size fit at all.`;
}

/** Finds the batch size: from the cache, or by probing (each trial shown live), then caches it. */
export async function resolveBatch(opts: ResolveBatchOptions): Promise<BatchResolution> {
  const { ctx } = opts;
  const outcomes = new Map<number, ProbeTrialOutcome>();
  const trials: TrialView[] = [];
  const ceiling =
    opts.ceiling ??
    (opts.globalBatchSize !== undefined ? opts.globalBatchSize / (opts.worldSize ?? 1) : opts.start * 4);
  const expected = Math.max(2, Math.ceil(Math.log2(Math.max(2, ceiling / Math.max(1, opts.start)))) + 2);
  const bar = ctx.progress({ label: opts.label ?? 'probe', unit: 'trial', summary: false });
  let n = 0;
  const probe: ChildProbeFn = async (batchSize) => {
    // The live line names the batch being tried now, for as long as its step runs.
    bar.update(n, `trying batch ${batchSize}  trial ${n + 1} of ~${Math.max(expected, n + 1)}`);
    const o = await opts.probe(batchSize);
    outcomes.set(batchSize, o);
    return o;
  };
  const onTrial = (t: TrialRecord): void => {
    n += 1;
    const v = view(outcomes.get(t.batchSize), t);
    trials.push(v);
    bar.log(trialLine(v, ctx));
    bar.update(n, `${n} of ~${Math.max(expected, n)} done`);
  };
  const cacheKey = makeCacheKey(opts.key);
  let result: PickBatchSizeResult | { batchSize: number; source: 'probe'; cachePath?: string };
  const predict = opts.predict ?? false;
  try {
    if ((opts.noCache || opts.floor) && opts.globalBatchSize !== undefined) {
      const r = await probeMicroBatchSize(probe, {
        ...(opts.floor ? { floor: opts.floor } : {}),
        ...(opts.fromBelow ? { fromBelow: opts.fromBelow } : {}),
        ...(opts.predictStop ? { predictStop: opts.predictStop } : {}),
        globalBatchSize: opts.globalBatchSize,
        ...(opts.worldSize !== undefined ? { worldSize: opts.worldSize } : {}),
        start: opts.start,
        ceiling,
        ...(opts.headroom ? { headroom: opts.headroom } : {}),
        onTrial,
        signal: ctx.signal,
      });
      result = { batchSize: r.microBatchSize, source: 'probe' };
    } else if (opts.noCache) {
      const r = await probeBatchSize(probe, { start: opts.start, ceiling, onTrial, signal: ctx.signal, predict });
      result = { batchSize: r.batchSize, source: 'probe' };
    } else {
      result = await pickBatchSize({
        ...opts.key,
        staticEstimate: opts.start,
        strategy: opts.strategy ?? 'probe',
        probe,
        ceiling,
        onTrial,
        signal: ctx.signal,
        env: ctx.env,
        cwd: ctx.cwd,
        predict,
        budgetBytes: opts.budgetBytes ?? null,
        ...(opts.refresh ? { refresh: true } : {}),
        ...(opts.saveExceptionsOnly ? { saveExceptionsOnly: true } : {}),
        ...(opts.globalBatchSize !== undefined ? { globalBatchSize: opts.globalBatchSize } : {}),
        ...(opts.worldSize !== undefined ? { worldSize: opts.worldSize } : {}),
        ...(opts.headroom ? { headroom: opts.headroom } : {}),
        ...(opts.fromBelow ? { fromBelow: opts.fromBelow } : {}),
        ...(opts.predictStop ? { predictStop: opts.predictStop } : {}),
        ...(opts.files ? { files: opts.files } : {}),
        logger: {
          warn: (line) =>
            opts.reportsNotSaved && / not saved to the cache: /.test(line) ? undefined : bar.log(`warning: ${line}`),
          info: (line) => (line.startsWith('not using the cache entry') ? bar.log(line) : undefined),
        },
      });
    }
  } catch (err) {
    bar.fail();
    showStderrTail(ctx, err);
    if (err instanceof NoBatchFitsError && (opts.advice || opts.globalBatchSize !== undefined)) {
      const divisors =
        opts.globalBatchSize !== undefined
          ? `${noDivisorFits(opts.globalBatchSize, opts.worldSize ?? 1, err.trials)} `
          : '';
      throw new NoBatchFitsError(err.smallestBatchSize, err.trials, {
        cause: err,
        advice: `${divisors}${opts.advice ?? ''}`.trim(),
      });
    }
    throw err;
  }
  if (result.source === 'probe') bar.done(`batch size ${result.batchSize}`);
  else bar.fail();
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
    saved: opts.noCache || opts.floor ? false : (picked.saved ?? null),
    notSavedReason: picked.notSavedReason ?? null,
  };
}
