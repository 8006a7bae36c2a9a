// `soup probe --exec … --try NAME=v1,v2`: the fastest configuration that fits, measured. Each
// candidate (one value per lever) gets its micro-batch m (the largest divisor of G / N that fits,
// the batch cache first), then its step time at m from the trainer's own runs: the command with
// {probe_steps} = 1, 1 + K and 1 + 2K, so start-up costs cancel. Samples/s at G = G / (a × step). The next
// smaller divisor is timed too, and taken while faster per sample (walkDown).
import { divisorsOf, type CacheLocationOptions } from '@soup/batch-probe';
import { confirmWalk } from './confirm-walk';
import { clockOf, pooledVariance, stepBy, type TimedRun } from './output-clock';
import { noteWithWarmUp, rowSteps } from './warm-up';
import { type StepsRun, stepsShown } from './steps-shown';
import type { FitAnswer, OneStepTrial, TimeAnswer } from './exec-answers';
import type { TuneEntry, TuneRow } from './tune-cache';
import { labelOf, tune, type TuneEvent, type TuneTiming } from './tune';

export type { TuneEvent } from './tune';
export type { FitAnswer, OneStepTrial, TimeAnswer } from './exec-answers';

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
  /**
   * What the tune key holds of the trainer: the command fit to store (a token in it as its sha256), the hashes of the
   * files it names and the sources it may import (an edit in either is a new key), or why those are unknown (then
   * the tune cache is neither read nor written). Absent: the command as typed, no files.
   */
  trainer?: { command: string; files: Record<string, string>; unknown: string | null };
  /** Measure even when the tune cache has an entry (and save the new one). @default false */
  refresh?: boolean;
  /** Neither read nor write the tune cache. @default false */
  noCache?: boolean;
  /** Where the tune cache is (beside the batch cache). */
  cache?: CacheLocationOptions;
  /** Told what the tuner does, as it does it. */
  onEvent?: (event: TuneEvent) => void;
  /** Aborts between runs: tuneExec throws the signal's reason. */
  signal?: AbortSignal;
  /**
   * m for a candidate's command (levers filled; {probe_steps} still in): the micro-batch probe,
   * whose trials run {probe_steps} = 1. `oneStepMs`: the wall time of its fit trial at m, when it
   * ran one (the 1-step point of the timing, measured the same way as `time`), and the span of its
   * output (`oneStepSpanMs`, null or absent when it printed nothing) and its size (`oneStepOutputChars`);
   * `oneStepAt`: its other trials that fitted, the same kind of run at another m.
   */
  fit(command: string): Promise<FitAnswer>;
  /**
   * One timing run: the candidate's command with {probe_steps} = `steps` at micro-batch m, through
   * the same probe as the fit trials (so its memory is judged over every step too); its wall time
   * and the span of its output (first chunk to last; absent when it printed nothing), the characters it
   * printed and the steps the trainer itself counted (each shows that the steps ran: steps-shown),
   * its peak; or why it failed (`overMemory`: it went over the budget or ran out of memory, and the
   * row is timed again at the next smaller divisor).
   */
  time(command: string, steps: number, m: number): Promise<TimeAnswer>;
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
 * Finds the fastest configuration of a trainer command's levers through tune(): each candidate's
 * micro-batch by `fit`, then its step time by `time`; returns the entry (also cached unless
 * noCache). Timing order: smallest m first. A candidate's first estimate (1 and 1 + K steps) is
 * compared with the best full estimate so far: if even 2× the noise seen there cannot lift it to the
 * best, its third run is skipped ("cannot win"). Throws NothingTimedError when no candidate could be timed.
 */
export async function tuneExec(o: TuneExecOptions): Promise<TuneExecResult> {
  // Over 150 lines: the runs, the clock and the pooled noise are state shared by every timing, refit and close call.
  const say = (event: TuneEvent): void => o.onEvent?.(event);
  const G = o.globalBatchSize;
  const N = o.worldSize ?? 1;
  const K = o.timeSteps;
  const command = o.trainer?.command ?? o.command;
  const files = o.trainer?.files;
  const unknown = o.trainer?.unknown ?? null;
  if (unknown !== null && !o.noCache) say({ type: 'note', message: `the tune cache is not used: ${unknown}` });
  const candidates = candidatesOf(o.tries).map((values) => ({ values, label: labelOf(values) }));
  const runs = new Map<TuneRow, Map<number, TimedRun & StepsRun>>(); // row → steps → run
  /**
   * Noise: a run's time varies by about the same milliseconds whichever candidate it is (the
   * trainer's start-up, the machine), so the residual variance of every row with three or more
   * runs is pooled, and each row's noise is the standard error of its slope under it. Three runs
   * of one row alone leave one degree of freedom, an estimate that swings by 10× between runs.
   * The clock (the output's span, or the wall time: `output-clock`) is the same for every row and
   * chosen again after each run; every timed row's figures are restated by it.
   */
  let clock = clockOf(runs, K);
  /** Rows whose three runs bend like a warm-up (or a disturbed middle run): a run of 1 + 3K steps tells which. */
  let pendingWarmUp = new Set<TuneRow>();
  const walkedFrom = new Set<TuneRow>(); // the walk's other micro-batch of a row (walkDown)
  const variance = (): number | null => rowSteps(runs, clock.clock).variance;
  const restate = (): void => {
    clock = clockOf(runs, K);
    const steps = rowSteps(runs, clock.clock); // a warm-up cancelled by the later runs' slope (warm-up.ts)
    pendingWarmUp = steps.pending;
    for (const [row, pts] of runs) {
      const est = steps.rows.get(row)!;
      row.note = noteWithWarmUp(row.note, est.warmUp);
      row.stepMs = est.stepMs;
      row.samplesPerSecond = est.stepMs > 0 ? G / ((row.accumulation! * est.stepMs) / 1000) : null;
      row.noiseMs = pts.size >= 3 ? est.seMs : null;
    }
  };
  const record = (row: TuneRow, steps: number, r: TimedRun & StepsRun): void => {
    if (!runs.has(row)) runs.set(row, new Map());
    runs.get(row)!.set(steps, r);
    restate();
  };
  let overMemory = false; // the last failed run went over the memory
  const refitted = new Set<TuneRow>(); // timed again at a smaller divisor: no fit trial there, its peak is its runs'
  /** One more timed run of a row with `steps` steps; its failure (the row then has no time), or null. */
  const run = async (row: TuneRow, steps: number): Promise<string | null> => {
    const t = await o.time(fillLevers(o.command, row.values), steps, row.microBatchSize!);
    if ('error' in t) {
      const error = `timing run of ${steps} steps failed: ${t.error}`;
      overMemory = t.overMemory === true;
      return untime(row, error);
    }
    if (refitted.has(row) && t.peakBytes !== undefined) row.peakBytes = Math.max(row.peakBytes ?? 0, t.peakBytes);
    const { outputChars = null, stepsSeen = null } = t;
    record(row, steps, { wallMs: t.ms, spanMs: t.outputSpanMs ?? null, outputChars, stepsSeen });
    return null;
  };
  /** A row without a time: its note, its runs dropped (they weigh no more on the clock or the noise). */
  const untime = (row: TuneRow, note: string): string => {
    Object.assign(row, { note, stepMs: null, noiseMs: null, samplesPerSecond: null });
    runs.delete(row);
    restate();
    return note;
  };
  /**
   * A run that went over the memory (a longer run reaches a peak that one step did not): the row
   * moves to the next smaller divisor, to be timed there from its first run (those runs are its
   * fit there); false when it failed otherwise, or no smaller divisor is left.
   */
  const refit = (row: TuneRow, failed: string): boolean => {
    const m = row.microBatchSize!;
    const next = divisorsOf(G / N)
      .filter((d) => d < m)
      .at(-1);
    if (!overMemory || next === undefined) return false;
    overMemory = false;
    say({ type: 'note', message: `${row.label}: ${failed} at micro-batch ${m}; timing it at ${next}` });
    Object.assign(row, { microBatchSize: next, accumulation: G / N / next, peakBytes: null });
    row.note = `re-fitted at ${next}: a longer run at ${m} went over the memory`;
    refitted.add(row);
    return true;
  };
  const figures = (row: TuneRow, note: string | null = null): TuneTiming => ({
    stepMs: row.stepMs!,
    noiseMs: row.noiseMs,
    ...(note ? { note, stoppedEarly: true } : {}),
  });
  /** Twice the standard error of the difference of two rows' step times, relative, and at least 5 %. */
  const marginOf = (row: TuneRow, other: TuneRow): number => {
    const seRow = (stepBy(runs.get(row)!, clock.clock, variance()).seMs ?? 0) / row.stepMs!;
    const seOther = (other.noiseMs ?? stepBy(runs.get(other)!, clock.clock, variance()).seMs ?? 0) / other.stepMs!;
    return Math.max(0.05, 2 * Math.hypot(seRow, seOther));
  };
  /**
   * The largest m is not always the fastest per sample (a step whose cost grows faster than m): the next smaller
   * divisor is timed too (runs of 1 and 1 + K, the 1-step run being the fit search's trial there when it ran one, then
   * 1 + 2K unless it cannot beat the row or the best so far), and while it is faster beyond the noise the row takes it
   * and walks on down. Its runs count in the clock and the noise.
   * Returns whether the row moved (it then has its three runs at the new m).
   */
  const walkDown = async (
    row: TuneRow,
    best: TuneRow | null,
    trials: ReadonlyMap<number, OneStepTrial> | undefined,
  ): Promise<boolean> => {
    let moved = false;
    for (;;) {
      const m = row.microBatchSize!;
      const next = divisorsOf(G / N)
        .filter((d) => d < m)
        .at(-1);
      if (next === undefined || row.samplesPerSecond === null) return moved;
      const below: TuneRow = {
        ...row,
        microBatchSize: next,
        accumulation: G / N / next,
        peakBytes: null,
        stepMs: null,
        noiseMs: null,
        samplesPerSecond: null,
        note: null,
      };
      refitted.add(below); // its peak is its runs'
      walkedFrom.add(below); // its runs weigh on the clock and the noise; it is no row of the table
      // Each run restates every row by the clock chosen again: a slope under the noise leaves a row with no time.
      const timed = (): { fast: number; slow: number } | null =>
        below.samplesPerSecond === null || row.samplesPerSecond === null
          ? null
          : { fast: below.samplesPerSecond, slow: row.samplesPerSecond };
      // The fit search's trial at the smaller m, where it ran one, is that m's 1-step run: one run fewer.
      const trial = trials?.get(next);
      if (trial !== undefined) {
        below.peakBytes = trial.peakBytes;
        record(below, 1, { wallMs: trial.ms, spanMs: trial.spanMs, outputChars: trial.outputChars });
      } else if (await run(below, 1)) return moved;
      if (await run(below, 1 + K)) return moved;
      const two = timed();
      // Two runs that read the smaller m no faster than m end the walk: the third run and the side-by-side timing are
      // for a smaller m that reads faster (in a tie, as the known-cost trainer's linear step, they cost the most).
      if (two === null || !(two.fast > two.slow)) return moved;
      const bestSps = best?.samplesPerSecond ?? null;
      const target = bestSps !== null && best !== null && bestSps > two.slow ? best : row;
      if (two.fast * (1 + marginOf(below, target)) < (target === row ? two.slow : bestSps!)) return moved;
      if (await run(below, 1 + 2 * K)) return moved;
      const v = pooledVariance(runs, 'wall');
      if (!stepsShown(runs.get(below)!, v === null ? null : Math.sqrt(v)).shown) return moved;
      const three = timed();
      if (three === null || !(three.fast > three.slow * (1 + marginOf(below, row)))) return moved;
      const side = (r: TuneRow) => ({
        time: (steps: number) => o.time(fillLevers(o.command, r.values), steps, r.microBatchSize!),
        accumulation: r.accumulation!,
      });
      const again = await confirmWalk({
        at: side(row),
        below: side(below),
        globalBatchSize: G,
        timeSteps: K,
        clock: clock.clock,
        runs,
      });
      if (again.belowPeakBytes !== null) below.peakBytes = Math.max(below.peakBytes ?? 0, again.belowPeakBytes);
      if (!again.faster) {
        say({
          type: 'note',
          message:
            `${row.label}: micro-batch ${next} read faster than ${m} (${three.fast.toFixed(1)} against ` +
            `${three.slow.toFixed(1)} samples/s) but not when both were timed again side by side ` +
            `(${again.said}): ` +
            `${m} stands`,
        });
        return moved;
      }
      say({
        type: 'note',
        message:
          `${row.label}: micro-batch ${next} is faster than ${m} (${three.fast.toFixed(1)} against ` +
          `${three.slow.toFixed(1)} samples/s, and ${again.said} ` +
          `timed again side by side): timing the next smaller one`,
      });
      // The row takes the smaller m with its runs; the larger m's runs stay (under `below`) for the clock and noise.
      const atM = runs.get(row)!;
      runs.set(row, runs.get(below)!);
      runs.set(below, atM);
      Object.assign(below, { microBatchSize: m, accumulation: G / N / m });
      Object.assign(row, {
        microBatchSize: next,
        accumulation: G / N / next,
        peakBytes: below.peakBytes,
        note: `walked down from micro-batch ${m}: faster per sample`,
      });
      refitted.add(row);
      restate();
      moved = true;
    }
  };
  const r = await tune<{ values: Record<string, string>; label: string }, FitAnswer>({
    candidates,
    globalBatchSize: G,
    worldSize: N,
    order: 'smallest-m-first',
    fit: (c) => o.fit(fillLevers(o.command, c.values)),
    // Named: a row re-fitted at a smaller divisor is timed again by this same function.
    time: async function timed(c, row, fit, ctx): Promise<TuneTiming | { error: string }> {
      const b = ctx.best;
      // The fit trial at m already ran the command with {probe_steps} = 1: it is the 1-step point.
      let failed: string | null = null;
      const outputChars = fit.oneStepOutputChars ?? null;
      if (fit.oneStepMs !== null)
        record(row, 1, { wallMs: fit.oneStepMs, spanMs: fit.oneStepSpanMs ?? null, outputChars });
      else failed = await run(row, 1);
      failed ??= await run(row, 1 + K);
      if (failed !== null)
        return refit(row, failed) ? timed(c, row, { ...fit, oneStepMs: null }, ctx) : { error: failed };
      // Early stop: two runs give a step time; its noise is the pooled run-to-run variance over its
      // own two points. If twice the standard error of the difference (at least 5 %) cannot lift it
      // to the best, its third run is not needed.
      if (b !== null && row.samplesPerSecond !== null) {
        const margin = marginOf(row, b);
        if (row.samplesPerSecond * (1 + margin) < b.samplesPerSecond!) {
          const note =
            `stopped early: cannot win (${row.samplesPerSecond.toFixed(1)} samples/s from runs of 1 and ` +
            `${1 + K} steps${clock.clock === 'output' ? ' timed by their output' : ''}, against ` +
            `${b.samplesPerSecond!.toFixed(1)}; margin ${(margin * 100).toFixed(0)} %)`;
          // A smaller m may still win (a step whose cost grows faster than m); if none does, the row stopped here.
          return (await walkDown(row, b, fit.oneStepAt)) ? figures(row) : figures(row, note);
        }
      }
      failed = await run(row, 1 + 2 * K);
      if (failed !== null)
        return refit(row, failed) ? timed(c, row, { ...fit, oneStepMs: null }, ctx) : { error: failed };
      // The runs must show that they ran their steps, else the row is "not timed" (steps-shown).
      const v = pooledVariance(runs, 'wall');
      const shown = stepsShown(runs.get(row)!, v === null ? null : Math.sqrt(v));
      if (!shown.shown) return { error: untime(row, shown.why) };
      // A warm-up is cancelled once a fourth run puts the later runs on one line; any row's bend may show now.
      for (const p of [...pendingWarmUp].filter((p) => !walkedFrom.has(p) && runs.get(p)?.size === 3)) {
        failed = await run(p, 1 + 3 * K);
        if (failed !== null && p === row)
          return refit(row, failed) ? timed(c, row, { ...fit, oneStepMs: null }, ctx) : { error: failed };
      }
      await walkDown(row, b, fit.oneStepAt);
      return figures(row);
    },
    // Close call: when the lower peak would take a tie from the faster row, the two get a longer run
    // each (1 + 4K steps, then 1 + 8K if still so); only then does the lower peak take it. A tie the
    // faster row would keep anyway (its peak is the lower or the same) is not run longer: the choice
    // would only change if the longer runs reversed the two beyond the noise, and within the noise
    // the faster is the better guess (a disturbed run had widened the pooled noise so that 14 %
    // apart read as a tie, and the two longer runs cost 35 s in the bench).
    again: {
      rounds: 2,
      async longer(lower, faster, round) {
        const span = [4 * K, 8 * K][round]!;
        say({
          type: 'note',
          message:
            `${faster.label} and ${lower.label} are within the noise, the lower peak on the ` +
            `slower: a longer run each (${1 + span} steps)`,
        });
        await run(faster, 1 + span);
        await run(lower, 1 + span);
      },
    },
    about: {
      command,
      ...(files ? { files } : {}),
      timeSteps: K,
      budgetBytes: o.budgetBytes,
      gpuName: o.gpuName,
      gpuMemoryGb: o.gpuMemoryGb,
    },
    clock: () => clock.why,
    ...(o.noCache || unknown !== null
      ? {}
      : {
          cache: {
            key: {
              command,
              ...(files ? { files } : {}),
              timeSteps: K,
              tries: o.tries,
              budgetBytes: o.budgetBytes,
              gpuName: o.gpuName,
              gpuMemoryGb: o.gpuMemoryGb,
            },
            location: o.cache ?? {},
            read: !o.refresh,
            hitMessage: (hit) =>
              `from the tune cache (measured ${hit.savedAt.replace(/\.\d+Z$/, 'Z')}, K = ${hit.timeSteps}` +
              `; --refresh to measure again):`,
          },
        }),
    startMessage:
      `tuning ${candidates.length} configurations at global batch ${G}${N > 1 ? ` (world size ${N})` : ''}` +
      `: the largest micro-batch each fits, then its step time from runs of 1, ${1 + K} and ` +
      `${1 + 2 * K} steps, there and at the next smaller micro-batch while that is faster`,
    ...(o.onEvent ? { onEvent: o.onEvent } : {}),
    ...(o.signal ? { signal: o.signal } : {}),
  });
  return { entry: r.entry, source: r.source, key: r.key, cachePath: r.cachePath, tuneMs: r.cost.ms };
}
