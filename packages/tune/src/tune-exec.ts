// `soup probe --exec … --try NAME=v1,v2`: the fastest configuration that fits, measured. Each
// candidate (one value per lever) gets its micro-batch m (the largest divisor of G / N that fits,
// the batch cache first), then its step time at m from the trainer's own runs: the command with
// {probe_steps} = 1, 1 + K and 1 + 2K, so start-up costs cancel. Samples/s at G = G / (a × step).
import type { CacheLocationOptions } from '@soup/batch-probe';
import { chooseConfiguration, type ConfigurationChoice, type MeasuredCandidate } from './choose-configuration';
import { NothingTimedError } from './errors';
import { clockOf, pooledVariance, stepBy, type TimedRun } from './output-clock';
import { tieTakenByPeak } from './settle-tie';
import { lookupTuneEntry, makeTuneKey, saveTuneEntry, type TuneEntry, type TuneRow } from './tune-cache';

/** Every combination of one value per lever, in the order given (the first lever varies slowest). */
export function candidatesOf(tries: Record<string, string[]>): Record<string, string>[] {
  let out: Record<string, string>[] = [{}];
  for (const [name, vals] of Object.entries(tries)) out = out.flatMap((c) => vals.map((v) => ({ ...c, [name]: v })));
  return out;
}

/** `command` with each `{NAME}` replaced by its value. */
export function fillLevers(command: string, values: Record<string, string>): string {
  return Object.entries(values).reduce((c, [k, v]) => c.replaceAll(`{${k}}`, v), command);
}

const labelOf = (values: Record<string, string>): string =>
  Object.entries(values)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');

/** What the fit search answered for one candidate. */
export type FitAnswer =
  | {
      batchSize: number;
      peakBytes: number | null;
      source: string;
      oneStepMs: number | null;
      oneStepSpanMs?: number | null;
    }
  | { batchSize: null; why: string };

/** What the tuner says while it runs, for a caller to print (the table is the caller's, from the entry). */
export type TuneEvent =
  /** The tuner starts measuring: what it will do. */
  | { type: 'start'; message: string }
  /** The answer comes from the tune cache (the entry is returned): where from. */
  | { type: 'cache-hit'; message: string }
  /** A step of the search worth a line (a close call run longer, a tie timed again). */
  | { type: 'note'; message: string };

export interface TuneExecOptions {
  /** The command as typed (levers and {probe_steps} unfilled). */
  command: string;
  /** `NAME → values`: every combination is a candidate (candidatesOf). */
  tries: Record<string, string[]>;
  globalBatchSize: number;
  /** @default 1 */
  worldSize?: number;
  /** K: each candidate is timed by runs of 1, 1 + K and 1 + 2K steps. */
  timeSteps: number;
  /** The budget the fits were judged by (part of the cache key; null: the device's). */
  budgetBytes: number | null;
  gpuName: string;
  gpuMemoryGb: number;
  /** Measure even when the tune cache has an entry (and save the new one). @default false */
  refresh?: boolean;
  /** Neither read nor write the tune cache. @default false */
  noCache?: boolean;
  /** Where the tune cache is (beside the batch cache). */
  cache?: CacheLocationOptions;
  /** Told what the tuner does, as it does it. */
  onEvent?: (event: TuneEvent) => void;
  /**
   * m for a candidate's command (levers filled; {probe_steps} still in): the micro-batch probe,
   * whose trials run {probe_steps} = 1. `oneStepMs`: the wall time of its fit trial at m, when it
   * ran one (the 1-step point of the timing, measured the same way as `time`), and the span of its
   * output (`oneStepSpanMs`, null or absent when it printed nothing).
   */
  fit(command: string): Promise<FitAnswer>;
  /**
   * One timing run: the candidate's command with {probe_steps} = `steps` at micro-batch m, through
   * the same probe as the fit trials (so its memory is judged over every step too); its wall time
   * and the span of its output (first chunk to last; absent when it printed nothing), or why it failed.
   */
  time(command: string, steps: number, m: number): Promise<{ ms: number; outputSpanMs?: number } | { error: string }>;
}

/** What tuneExec found: the entry, where it came from, its cache key and file, and what the measuring took. */
export interface TuneExecResult {
  entry: TuneEntry;
  source: 'cache' | 'measured';
  key: string;
  /** The tune cache file written (null: from the cache, or noCache). */
  cachePath: string | null;
  /** Wall time of the measuring, in ms, before the cache write (0 from the cache). */
  tuneMs: number;
}

/**
 * Finds the fastest configuration of a trainer command's levers: each candidate's micro-batch by
 * `fit`, then its step time by `time`; returns the entry (also cached unless noCache). Timing
 * order: smallest m first. A candidate's first estimate (1 and 1 + K steps) is compared with the
 * best full estimate so far: if even 2× the noise seen there cannot lift it to the best, its third
 * run is skipped ("cannot win"). Throws NothingTimedError when no candidate could be timed.
 */
export async function tuneExec(o: TuneExecOptions): Promise<TuneExecResult> {
  const say = (event: TuneEvent): void => o.onEvent?.(event);
  const G = o.globalBatchSize;
  const N = o.worldSize ?? 1;
  const perRank = G / N;
  const key = makeTuneKey({
    command: o.command,
    tries: o.tries,
    globalBatchSize: G,
    worldSize: N,
    budgetBytes: o.budgetBytes,
    gpuName: o.gpuName,
    gpuMemoryGb: o.gpuMemoryGb,
  });
  const location = o.cache ?? {};
  if (!o.noCache && !o.refresh) {
    const hit = lookupTuneEntry(key, location);
    if (hit) {
      say({
        type: 'cache-hit',
        message:
          `from the tune cache (measured ${hit.savedAt.replace(/\.\d+Z$/, 'Z')}, K = ${hit.timeSteps}` +
          `; --refresh to measure again):`,
      });
      return { entry: hit, source: 'cache', key, cachePath: null, tuneMs: 0 };
    }
  }
  const candidates = candidatesOf(o.tries);
  say({
    type: 'start',
    message:
      `tuning ${candidates.length} configurations at global batch ${G}${N > 1 ? ` (world size ${N})` : ''}` +
      `: the largest micro-batch each fits, then its step time from runs of 1, ${1 + o.timeSteps} and ` +
      `${1 + 2 * o.timeSteps} steps`,
  });
  const t0 = performance.now();
  const rows: TuneRow[] = [];
  // The fit trial at m already ran the command with {probe_steps} = 1: it is the 1-step point.
  const oneStep = new Map<number, TimedRun>(); // row → its fit trial's run
  for (const values of candidates) {
    const cmd = fillLevers(o.command, values);
    const fit = await o.fit(cmd);
    if (fit.batchSize !== null && fit.oneStepMs !== null)
      oneStep.set(rows.length, { wallMs: fit.oneStepMs, spanMs: fit.oneStepSpanMs ?? null });
    rows.push({
      label: labelOf(values),
      values,
      microBatchSize: fit.batchSize,
      accumulation: fit.batchSize === null ? null : perRank / fit.batchSize,
      peakBytes: fit.batchSize === null ? null : fit.peakBytes,
      stepMs: null,
      noiseMs: null,
      samplesPerSecond: null,
      note: fit.batchSize === null ? fit.why : null,
    });
  }
  // Smallest m first: its runs are the shortest, and a larger (longer) one that cannot win then
  // stops after two runs instead of three.
  const order = rows
    .map((_, i) => i)
    .filter((i) => rows[i]!.microBatchSize !== null)
    .sort((a, b) => rows[a]!.microBatchSize! - rows[b]!.microBatchSize!);
  const K = o.timeSteps;
  const runs = new Map<number, Map<number, TimedRun>>(); // row → steps → run
  /**
   * Noise: a run's time varies by about the same milliseconds whichever candidate it is (the
   * trainer's start-up, the machine), so the residual variance of every row with three or more
   * runs is pooled, and each row's noise is the standard error of its slope under it. Three runs
   * of one row alone leave one degree of freedom, an estimate that swings by 10× between runs.
   * The clock (the output's span, or the wall time: `output-clock`) is the same for every row and
   * chosen again after each run.
   */
  let clock = clockOf(runs, K);
  const variance = (): number | null => pooledVariance(runs, clock.clock);
  /** Every row's step time, samples/s and noise by the current clock. */
  const refresh = (): void => {
    clock = clockOf(runs, K);
    const v = variance();
    for (const [i, pts] of runs) {
      const row = rows[i]!;
      const est = stepBy(pts, clock.clock, v);
      row.stepMs = est.stepMs;
      row.samplesPerSecond = est.stepMs > 0 ? G / ((row.accumulation! * est.stepMs) / 1000) : null;
      row.noiseMs = pts.size >= 3 ? est.seMs : null;
    }
  };
  /** One more timed run of row i with `steps` steps; false (and a note) when it failed. */
  const run = async (i: number, steps: number): Promise<boolean> => {
    const row = rows[i]!;
    const t = await o.time(fillLevers(o.command, row.values), steps, row.microBatchSize!);
    if ('error' in t) {
      row.note = `timing run of ${steps} steps failed: ${t.error}`;
      row.stepMs = row.noiseMs = row.samplesPerSecond = null;
      runs.delete(i);
      refresh();
      return false;
    }
    record(i, steps, { wallMs: t.ms, spanMs: t.outputSpanMs ?? null });
    return true;
  };
  const record = (i: number, steps: number, r: TimedRun): void => {
    if (!runs.has(i)) runs.set(i, new Map());
    runs.get(i)!.set(steps, r);
    refresh();
  };
  let best: number | null = null;
  for (const i of order) {
    const row = rows[i]!;
    if (oneStep.has(i)) record(i, 1, oneStep.get(i)!);
    else if (!(await run(i, 1))) continue;
    if (!(await run(i, 1 + K))) continue;
    // Early stop: two runs give a step time; its noise is the pooled run-to-run variance over its
    // own two points. If twice the standard error of the difference (at least 5 %) cannot lift it
    // to the best, its third run is not needed.
    if (best !== null && row.samplesPerSecond !== null) {
      const b = rows[best]!;
      const seRow = (stepBy(runs.get(i)!, clock.clock, variance()).seMs ?? 0) / row.stepMs!;
      const seBest = (b.noiseMs ?? 0) / b.stepMs!;
      const margin = Math.max(0.05, 2 * Math.hypot(seRow, seBest));
      if (row.samplesPerSecond * (1 + margin) < b.samplesPerSecond!) {
        row.note =
          `stopped early: cannot win (${row.samplesPerSecond.toFixed(1)} samples/s from runs of 1 and ` +
          `${1 + K} steps${clock.clock === 'output' ? ' timed by their output' : ''}, against ` +
          `${b.samplesPerSecond!.toFixed(1)}; margin ${(margin * 100).toFixed(0)} %)`;
        continue;
      }
    }
    if (!(await run(i, 1 + 2 * K))) continue;
    if (row.samplesPerSecond !== null && (best === null || row.samplesPerSecond > rows[best]!.samplesPerSecond!))
      best = i;
  }
  // Only fully timed rows compete (a row stopped early has no noise estimate and lost by a margin).
  const choose = (): ConfigurationChoice =>
    chooseConfiguration(
      rows.map((r): MeasuredCandidate => ({ ...r, stepMs: r.noiseMs === null ? null : r.stepMs })),
      G,
    );
  // Close call: when the lower peak would take a tie from the faster row (tieTakenByPeak), the two
  // get a longer run each (1 + 4K steps, then 1 + 8K if still so); only then does the lower peak
  // take it. A tie the faster row would keep anyway (its peak is the lower or the same) is not run
  // longer: the choice would only change if the longer runs reversed the two beyond the noise, and
  // within the noise the faster is the better guess (a disturbed run had widened the pooled noise
  // so that 14 % apart read as a tie, and the two longer runs cost 35 s in the bench).
  let choice = choose();
  for (const span of [4 * K, 8 * K]) {
    const pair = tieTakenByPeak(choice);
    if (pair === null) break;
    const [lower, faster] = pair;
    say({
      type: 'note',
      message:
        `${rows[faster]!.label} and ${rows[lower]!.label} are within the noise, the lower peak on the ` +
        `slower: a longer run each (${1 + span} steps)`,
    });
    await run(faster, 1 + span);
    await run(lower, 1 + span);
    choice = choose();
  }
  if (choice.chosen === null)
    throw new NothingTimedError(
      `no configuration could be timed: ${rows.map((r) => `${r.label}: ${r.note ?? 'not timed'}`).join('; ')}`,
    );
  const entry: TuneEntry = {
    chosen: choice.chosen,
    reason: withEarlyStops(choice.reason, rows),
    rows,
    globalBatchSize: G,
    worldSize: N,
    timeSteps: o.timeSteps,
    timedBy: clock.why,
    budgetBytes: o.budgetBytes,
    gpuName: o.gpuName,
    gpuMemoryGb: o.gpuMemoryGb,
    command: o.command,
    savedAt: new Date().toISOString(),
  };
  const tuneMs = performance.now() - t0;
  const cachePath = o.noCache ? null : await saveTuneEntry(key, entry, location);
  return { entry, source: 'measured', key, cachePath, tuneMs };
}

/** The choice's reason, naming the rows that stopped early (they lost by a margin before a full estimate). */
export function withEarlyStops(reason: string, rows: readonly TuneRow[]): string {
  const early = rows
    .filter((r) => r.note?.startsWith('stopped early'))
    .map((r) => (r.microBatchSize === null ? r.label : `${r.label} at ${r.microBatchSize}`));
  return early.length === 0 ? reason : `${reason}; stopped early, since they could not win: ${early.join(', ')}`;
}
