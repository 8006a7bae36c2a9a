// `gradient_checkpointing: auto` in soup train / soup plan: a measured choice. Each tier (off,
// selective, full) gets its largest micro-batch m (a divisor of G that fits, the batch cache
// first for the lightest tier; a heavier tier only above what the lighter ones fit); its step is
// timed in this process (a warm-up, then timed steps) from m / 2 up while faster, else down while
// faster (on a CPU the largest m is not always the fastest per sample: micro-walk); the two
// lightest (no checkpointing and selective) walk together: their opening two micro-batches (m / 2
// and m) all four timed side by side, in turn, so that each one's slope and the two at each m are
// compared under one load, then side by side at each m both take (step-timing). A heavier tier is
// not tried at all when a lighter one is already past its best micro-batch (pastItsBest); on the
// CPU, one left with a single micro-batch above the lighter ones' is timed before it is fitted,
// and fitted only if it can win (time-first). The most samples per second at G wins, a tie within the noise going to
// the lower peak, once the two were timed side by side: from the start, or again at the end
// (settle-tie), on their sessions kept warm from the first timing; the tie that decides whether a
// lighter candidate is past its best is timed again before a heavier one is searched. The choice is
// remembered in the tune cache.
import { type CacheLocationOptions, divisorsOf, formatBytes, NoBatchFitsError } from '@soup/batch-probe';
import { peakIsLower } from './choose-configuration';
import { NothingChosenError } from './errors';
import { type FitTrial, holdable, holdBytesOf, KeptSessions, peakAtMost } from './kept-sessions';
import {
  fastestHalf,
  samplesPerSecondAt,
  timeAlternately,
  timeSideBySide,
  timeTrainStep,
  type LimitOf,
  type OpenStep,
  type StepTiming,
  type StepGptSpec,
  type StepOffload,
  type StepToTime,
  type WinLimit,
} from './step-timing';
import { MicroWalk } from './micro-walk';
import { timeFirstAt, timeThenFit } from './time-first';
import { chooseSettled, rowsToKeep, tieOver, timeTieAgain, type Retiming } from './settle-tie';
import { lookupTuneEntry, makeTuneKey, saveTuneEntry, type TuneEntry, type TuneRow } from './tune-cache';
import { type TuneEvent, withEarlyStops } from './tune-exec';

/** The checkpointing tiers `gradient_checkpointing: auto` chooses between, lightest first (null: none). */
export const TRAIN_TIERS: readonly ('selective' | 'full' | null)[] = [null, 'selective', 'full'];
const nameOf = (g: string | null): string => g ?? 'false';

/**
 * A candidate's rows past its best micro-batch: the largest m it timed (at most `top`, the largest
 * that fits) has fewer samples/s than the next smaller m it timed. The search assumes one best
 * micro-batch per candidate, slower on either side (it stops at the first slower m); by the same
 * assumption every m above is slower still per sample, and a candidate that does more work at
 * every micro-batch (full checkpointing, an offload) is slower than that, so it cannot win above.
 * Null when fewer than two were timed or the largest is not slower.
 */
export function pastItsBest(rows: readonly TuneRow[], top: number): { top: TuneRow; below: TuneRow } | null {
  const [atTop, below] = rows
    .filter((r) => r.microBatchSize !== null && r.samplesPerSecond !== null && r.microBatchSize <= top)
    .sort((a, b) => b.microBatchSize! - a.microBatchSize!);
  return atTop && below && atTop.samplesPerSecond! < below.samplesPerSecond! ? { top: atTop, below } : null;
}

/** A micro-batch search's answer as tuneTrain reads it: the largest fitting m and the trials that found it. */
export interface MicroFit {
  batchSize: number;
  trials: readonly FitTrial[];
}

/** What tuneTrain chose: the tier `T` (null: none), its recompute set and offload, at micro-batch m. */
export interface TrainTuneResult<T extends string, R extends MicroFit> {
  entry: TuneEntry;
  source: 'measured' | 'cache';
  granularity: T | null;
  recompute: string[];
  /** The chosen activation offload (null: none). */
  offload: StepOffload | null;
  microBatchSize: number;
  /** The chosen candidate's micro-batch search (null from the tune cache, or when m is not its largest). */
  resolution: R | null;
  /** The fit trial at the chosen candidate and micro-batch, when the search ran one there. */
  measured: R['trials'][number] | null;
}

const offloadName = (p: StepOffload | null): string => p?.target ?? 'null';
/**
 * Rounds of a tie's second timing (one step of each a round): five, so that each side's noise is
 * the standard error of three values (the fastest half of five, rounded up), as the first timing's
 * of six steps. With four (two values each) the noise was so rough that two rows 8–11 % apart side
 * by side still read as a tie (±20 ms on a 210 ms step), and the lower peak took it; a sixth round
 * adds no value to either fastest half.
 */
const RETIME_ROUNDS = 5;
/** At most this many pairs timed again in one choice (before a heavier candidate and at the end, together). */
const MAX_RETIMES = 2;
/** How much work a tier adds, for the search floors: none and selective alike (see tuneTrain), full more. */
const workRank = (g: string | null): number => (g === 'full' ? 1 : 0);

/** One candidate: a tier and an offload; `rank`: how far each lever is from the lightest. */
interface Candidate<T extends string> {
  g: T | null;
  offload: StepOffload | null;
  rank: [number, number];
  label: string;
  values: Record<string, string>;
  recompute: string[];
}

/** Options of {@link tuneTrain}: `T` a tier's name, `R` what `resolveMicro` answers. */
export interface TuneTrainOptions<T extends string, R extends MicroFit> {
  /** The model whose step is timed. */
  spec: StepGptSpec;
  /** G: the optimizer's batch; candidates' micro-batches are its divisors. */
  globalBatchSize: number;
  /** ONNX Runtime's intra-op threads for the timed steps (0: its default). */
  threads: number;
  /** The device the run trains on: every step is timed there. */
  device: { kind: 'cpu' | 'cuda'; id: number };
  /** The checkpointing tiers to choose between, lightest first (null: none). */
  tiers: readonly (T | null)[];
  /** The activation offloads to choose between, lightest first (null: none). */
  offloads: readonly (StepOffload | null)[];
  /** Whether the offload is chosen (`activation_offloading: auto`): then it is a lever in the rows and the key. */
  offloadIsLever: boolean;
  /** The blocks a tier recomputes. */
  recomputeOf(tier: T | null): string[];
  /** What the tune cache keys the choice by, beside the levers: the model and what else shapes a step. */
  cacheCommand: string;
  /** How the entry names what was tuned (its `command`). */
  command: string;
  budgetBytes: number | null;
  gpuName: string;
  gpuMemoryGb: number;
  /** Neither read nor write the tune cache. */
  noCache: boolean;
  /**
   * The largest fitting divisor of G for a recompute set and offload, searching only above `floor`
   * (a divisor the fits' peaks put well over the budget need not be tried). Throws NoBatchFitsError
   * when none fits.
   */
  resolveMicro(recompute: string[], floor: number, offload: StepOffload | null): Promise<R>;
  /** Timed steps per candidate after the warm-up. @default 6 */
  steps?: number;
  /** The working directory of the timed steps (a disk offload's scratch is relative to it). */
  cwd: string;
  /** Where the tune cache is (beside the batch cache). */
  cache?: CacheLocationOptions;
  /** Told what the tuner does, as it does it. */
  onEvent?: (event: TuneEvent) => void;
}

/**
 * Chooses the tier (and, with `offloadIsLever`, the offload) by measured speed; see the file
 * comment. Throws NothingChosenError when no candidate could be timed.
 */
// One search over every candidate, its walks, holds and ties share state: split, each part would
// take a dozen closures as parameters.
export async function tuneTrain<T extends string, R extends MicroFit>(
  o: TuneTrainOptions<T, R>,
): Promise<TrainTuneResult<T, R>> {
  const say = (event: TuneEvent): void => o.onEvent?.(event);
  const G = o.globalBatchSize;
  const withOffload = o.offloadIsLever;
  const tries: Record<string, string[]> = { gradient_checkpointing: o.tiers.map(nameOf) };
  if (withOffload) tries.activation_offloading = o.offloads.map(offloadName);
  const key = makeTuneKey({
    command: o.cacheCommand,
    tries,
    globalBatchSize: G,
    worldSize: 1,
    budgetBytes: o.budgetBytes,
    gpuName: o.gpuName,
    gpuMemoryGb: o.gpuMemoryGb,
  });
  const what = [o.tiers.length > 1 ? 'gradient_checkpointing' : null, withOffload ? 'activation_offloading' : null]
    .filter((x) => x !== null)
    .join(' and ');
  const location = o.cache ?? {};
  const candidates: Candidate<T>[] = o.offloads.flatMap((off, oi) =>
    o.tiers.map((g) => {
      const values: Record<string, string> = { gradient_checkpointing: nameOf(g) };
      if (withOffload) values.activation_offloading = offloadName(off);
      return {
        g,
        offload: off,
        rank: [workRank(g), oi] as [number, number],
        values,
        label: Object.entries(values)
          .map(([k, v]) => `${k}=${v}`)
          .join(', '),
        recompute: o.recomputeOf(g),
      };
    }),
  );
  /** The candidate a row measured: by its label, else by its lever values. */
  const candidateOf = (r: TuneRow): Candidate<T> =>
    candidates.find((x) => x.label === r.label) ??
    candidates.find((x) => Object.entries(x.values).every(([k, v]) => r.values[k] === v))!;
  const result = (
    entry: TuneEntry,
    source: 'measured' | 'cache',
    resolution: R | null,
    measured: R['trials'][number] | null,
  ): TrainTuneResult<T, R> => {
    const r = entry.rows[entry.chosen]!;
    const c = candidateOf(r);
    return {
      entry,
      source,
      granularity: c.g,
      recompute: c.recompute,
      offload: c.offload,
      microBatchSize: r.microBatchSize!,
      resolution,
      measured,
    };
  };
  if (!o.noCache) {
    const hit = lookupTuneEntry(key, location);
    if (hit) {
      say({
        type: 'cache-hit',
        message:
          `${what}: auto, from the tune cache (measured ${hit.savedAt.replace(/\.\d+Z$/, 'Z')}` +
          `; --no-cache to measure again):`,
      });
      return result(hit, 'cache', null, null);
    }
  }
  const steps = o.steps ?? 6;
  // The first two candidates, as light as each other (no checkpointing and selective), walk their
  // micro-batches together: the opening two of both, four timings side by side, then side by side
  // at each m both take (walkAll).
  const pairedStart = candidates.length > 1 && candidates[0]!.rank.join() === candidates[1]!.rank.join();
  say({
    type: 'start',
    message:
      `${what}: auto, measured: each choice's largest micro-batch (a divisor of ${G}) that fits, then its steps ` +
      `timed (a warm-up, then ${steps} steps; ` +
      `the mean of the fastest half) from half that micro-batch up while faster, else down while faster; full ` +
      `checkpointing and an offload are tried only where the lighter choices do not fit, and not when a lighter ` +
      `one is already slower at its largest micro-batch than below it` +
      (o.device.kind === 'cpu'
        ? " (on the CPU, one left with a single micro-batch above the lighter ones' is timed first and fitted " +
          'only if it can win)'
        : '') +
      '; ' +
      (pairedStart
        ? `${candidates[0]!.label} and ${candidates[1]!.label} are timed side by side, in turn: at the first two ` +
          `micro-batches both take all four at once, then two at a time at each micro-batch both take; `
        : '') +
      `a tie that the lower peak would take from a faster one is timed again, the two alternately` +
      `${pairedStart ? ', unless they were timed side by side already' : ''}`,
  });
  const byCandidate = new Map<Candidate<T>, TuneRow[]>(candidates.map((c) => [c, []]));
  // Every step is timed on the device the run trains on.
  const deviceOf = { executionProvider: o.device.kind, deviceId: o.device.id };
  const divisors = divisorsOf(G);
  // Fit, lightest first. Full recomputation and an offload only add work: at one micro-batch they
  // are not faster (small template, threads 1, fastest half of 10 steps: full 430 ms at 16 against
  // 363 without checkpointing; the disk offload's step 1.5× the fused one). So they can only win at
  // a micro-batch no lighter choice fits, and their search starts above that (`floor`). Selective
  // is not ranked above no checkpointing: it trades the attention probabilities' memory traffic for
  // their recompute, and which is faster depends on the machine's state (alone: 170 against 171 ms
  // at 8; beside other work, in three alternating rounds, selective 43.1 samples/s against 37.4),
  // so both are measured.
  //
  // Each candidate is fitted and then timed, lightest first, so that a heavier one is not even
  // fitted when a lighter one shows it cannot win (pastItsBest).
  const fitted = new Map<Candidate<T>, { r: R; floor: number }>();
  const lighterThan = (c: Candidate<T>): Candidate<T>[] =>
    candidates.filter(
      (x) =>
        x !== c && x.rank[0] <= c.rank[0] && x.rank[1] <= c.rank[1] && (x.rank[0] < c.rank[0] || x.rank[1] < c.rank[1]),
    );
  let best: TuneRow | null = null;
  const stopped = new Set<TuneRow>();
  let choice: Awaited<ReturnType<typeof chooseSettled>>['choice'];
  let rows: TuneRow[];
  // Warm sessions kept from their first timing, by row (label and m): those of the rows a tie's
  // second timing would take now (rowsToKeep: the fastest, and the row that would take a tie from
  // it), so that it needs no new session and no warm-up. At most two, beside the one being timed,
  // and only while the sessions held at once fit `holdBytes` (kept-sessions: on a GPU, the budget).
  const kept = new KeptSessions<OpenStep>(holdBytesOf(o.device.kind, o.budgetBytes));
  const keyOf = (r: TuneRow): string => `${r.label}\u0000${r.microBatchSize}`;
  /** A row's peak, or a bound on it from its candidate's fits at a larger m. */
  const peakOf = (r: TuneRow): number | null =>
    r.peakBytes ?? peakAtMost(fitted.get(candidateOf(r))?.r.trials ?? [], r.microBatchSize!);
  /** The indices of `rows` stopped early: they do not compete. */
  const excludedOf = (rows: readonly TuneRow[]): Set<number> =>
    new Set(rows.flatMap((r, i) => (stopped.has(r) ? [i] : [])));
  // Pairs (row keys) whose first timings were taken side by side: a tie between them is already
  // settled by a timing under one load, so it is not timed again.
  const sideBySide: [string, string][] = [];
  /** A pair of row keys as indices into `rows`. */
  const indicesIn =
    (rows: readonly TuneRow[]) =>
    ([a, b]: [string, string]): [number, number] => [
      rows.findIndex((r) => keyOf(r) === a),
      rows.findIndex((r) => keyOf(r) === b),
    ];
  const keepOnly = async (rows: readonly TuneRow[]): Promise<void> => {
    const toKeep = rowsToKeep(rows, G, excludedOf(rows), sideBySide.map(indicesIn(rows))).map((i) => rows[i]!);
    // A pair that cannot be held together is not timed side by side: keep the faster (the last) alone.
    await kept.keepOnly(new Set((holdable(toKeep.map(peakOf), kept.holdBytes) ? toKeep : toKeep.slice(-1)).map(keyOf)));
  };
  const stepAt = (c: Candidate<T>, m: number): StepToTime => ({
    ...deviceOf,
    spec: o.spec,
    recompute: c.recompute,
    batchSize: m,
    threads: o.threads,
    offload: c.offload,
    cwd: o.cwd,
  });
  const stepOf = (r: TuneRow): StepToTime => stepAt(candidateOf(r), r.microBatchSize!);
  // Pairs timed again before the end (by row key), so that the end does not time them again.
  const retimedEarly: [string, string][] = [];
  const at = (r: TuneRow): string => `${r.label} at ${r.microBatchSize}`;
  /**
   * A tie's second timing (timeAlternately, on the sessions kept warm where there are), with its dim
   * line; null, said, when the two sessions do not fit together.
   */
  const retime = async (a: TuneRow, b: TuneRow): Promise<[Retiming, Retiming] | null> => {
    const t0 = performance.now();
    const peaks = [peakOf(a), peakOf(b)];
    if (!holdable(peaks, kept.holdBytes)) {
      const shown = peaks.map((p) => (p === null ? 'unknown' : formatBytes(p))).join(' + ');
      say({
        type: 'note',
        message:
          `${at(a)} and ${at(b)} are within the noise, the lower peak on the slower, but their two ` +
          `sessions do not fit together (${shown} over ${formatBytes(kept.holdBytes)}): not timed side by side, ` +
          `the faster stands`,
      });
      return null;
    }
    await kept.makeRoom(peaks, new Set([keyOf(a), keyOf(b)]));
    const [sa, sb] = [kept.get(keyOf(a)), kept.get(keyOf(b))];
    const t = await timeAlternately(sa ?? stepOf(a), sb ?? stepOf(b), RETIME_ROUNDS);
    const warm =
      sa && sb
        ? 'both sessions kept warm from their first timing'
        : sa || sb
          ? 'one session kept warm from its first timing'
          : 'two new sessions';
    say({
      type: 'note',
      message:
        `${at(a)} and ${at(b)} are within the noise, the lower peak on the slower: timed again side by ` +
        `side (${RETIME_ROUNDS} rounds, ${warm}, ${((performance.now() - t0) / 1000).toFixed(1)} s)`,
    });
    return t;
  };
  /**
   * Before a heavier candidate is fitted: when the tie that the end would time again is a lighter
   * candidate's largest timed m (the faster) against the m below it (the lower peak), that tie
   * decides whether the lighter one is past its best, so it is timed again now and its rows take
   * the second timing's figures (the end does not time it again).
   */
  const settleSlope = async (lighters: readonly Candidate<T>[]): Promise<void> => {
    const all = [...byCandidate.values()].flat();
    const pair = tieOver(all, G, excludedOf(all));
    if (pair === null || retimedEarly.length >= MAX_RETIMES) return;
    const [i, j] = pair;
    // Timed side by side from the start (the four opening timings): settled as it stands.
    if (sideBySide.some((p) => p.includes(keyOf(all[i]!)) && p.includes(keyOf(all[j]!)))) return;
    const x = lighters.find((l) => candidateOf(all[i]!) === l && candidateOf(all[j]!) === l);
    if (!x) return;
    const [top, below] = byCandidate
      .get(x)!
      .filter(
        (r) =>
          r.microBatchSize !== null && r.samplesPerSecond !== null && r.microBatchSize <= fitted.get(x)!.r.batchSize,
      )
      .sort((u, v) => v.microBatchSize! - u.microBatchSize!);
    if (top !== all[j] || below !== all[i]) return;
    const now = await timeTieAgain(all, i, j, G, retime, 'to decide whether a heavier choice can win');
    if (now === null) return; // not timed side by side: decided on first timings, as before
    retimedEarly.push([keyOf(all[i]!), keyOf(all[j]!)]);
    let k = 0;
    for (const [cand, list] of byCandidate) {
      byCandidate.set(cand, now.slice(k, k + list.length));
      k += list.length;
    }
    // The faster row kept its figures, so the best so far is unchanged unless the other overtook it.
    if (best !== null && now[i]!.samplesPerSecond! > best.samplesPerSecond!) best = now[i]!;
    else if (best === all[j]) best = now[j]!;
  };
  // The second candidate's fit when it was found ahead of its turn, to walk beside the first (null:
  // none fits; not null: it was walked then).
  const fitAhead = new Map<Candidate<T>, R | null>();
  const fitOf = async (c: Candidate<T>, floor: number): Promise<R | null> => {
    if (fitAhead.has(c)) return fitAhead.get(c)!;
    try {
      return await o.resolveMicro(c.recompute, floor, c.offload);
    } catch (err) {
      if (!(err instanceof NoBatchFitsError)) throw err;
      return null;
    }
  };
  const fitPeak = (r: R, m: number): number | null =>
    r.trials.find((x) => x.batch_size === m && x.result === 'fit')?.peak_bytes ?? null;
  const rowOf = (
    c: Candidate<T>,
    r: R | null,
    m: number,
    t: StepTiming,
    stoppedEarly: boolean,
    note: string | null,
  ): TuneRow => ({
    label: c.label,
    values: c.values,
    microBatchSize: m,
    accumulation: G / m,
    peakBytes: r === null ? null : fitPeak(r, m),
    stepMs: t.stepMs,
    noiseMs: stoppedEarly ? null : t.noiseMs,
    samplesPerSecond: samplesPerSecondAt(G, m, t.stepMs),
    note,
  });
  /**
   * A timed row joins its candidate's rows and the best so far; its open session is kept (the caller made room for it)
   * while a second timing may want it.
   */
  const record = (
    c: Candidate<T>,
    row: TuneRow,
    stoppedEarly: boolean,
    open: OpenStep | null,
    peak: number | null,
  ): void => {
    byCandidate.get(c)!.push(row);
    if (stoppedEarly) stopped.add(row);
    else if (best === null || row.samplesPerSecond! > best.samplesPerSecond!) best = row;
    if (open) kept.keep(keyOf(row), open, peak);
  };
  /**
   * When a timing at m may stop (see timeTrainStep) against a reference row: when it cannot reach
   * the reference's samples/s, by 5 % when its peak is above the reference's beyond the probe's
   * resolution (peakIsLower: it cannot win a tie, which goes to the lower peak), else by 10 %.
   */
  const limitAgainst = (
    peak: number | null,
    m: number,
    ref: Pick<TuneRow, 'samplesPerSecond' | 'peakBytes'>,
  ): WinLimit => ({
    cannotWinAboveMs: (G / ((G / m) * ref.samplesPerSecond!)) * 1000,
    margin: peak !== null && peakIsLower(ref.peakBytes, peak) ? 0.05 : 0.1,
  });
  /** limitAgainst the best so far, with the peak r's fit measured at m; undefined before anything is timed. */
  const limitAt = (r: R, m: number): WinLimit | undefined =>
    best === null ? undefined : limitAgainst(fitPeak(r, m), m, best);
  const stopNote = (times: readonly number[], l: WinLimit): string =>
    `stopped early: cannot win (its fastest of 3 steps, ${Math.min(...times).toFixed(0)} ms, is over ` +
    `${l.cannotWinAboveMs.toFixed(0)} ms + ${l.margin * 100} %` +
    `${l.margin < 0.1 ? ", and its peak is above the best's" : ''})`;
  /** c's step at m timed alone. */
  const timeAt = async (c: Candidate<T>, r: R, m: number): Promise<TuneRow> => {
    const limit = limitAt(r, m);
    const peak = peakAtMost(r.trials, m);
    await kept.makeRoom([peak]);
    const t = await timeTrainStep({
      ...stepAt(c, m),
      steps,
      ...(limit ? { cannotWinAboveMs: limit.cannotWinAboveMs, margin: limit.margin } : {}),
      keepOpen: true,
    });
    const row = rowOf(c, r, m, t, t.stoppedEarly, t.stoppedEarly ? stopNote(t.times, limit!) : null);
    record(c, row, t.stoppedEarly, t.open, peak);
    await keepOnly([...byCandidate.values()].flat());
    return row;
  };
  type Walker = { c: Candidate<T>; r: R; walk: MicroWalk };
  /** One point of a side-by-side timing: a walker's candidate at micro-batch m. */
  type Point = { w: Walker; m: number };
  /**
   * When point j of a side-by-side timing may stop: against the best so far or, under the
   * same load, against the fastest of the other points still running with three steps or more (the
   * mean of its fastest half so far), whichever is faster; by 5 % when j's peak is above that one's,
   * else by 10 % (limitAgainst).
   */
  const limitsIn =
    (points: readonly Point[]): LimitOf =>
    (j, times, stopped) => {
      let ref: Pick<TuneRow, 'samplesPerSecond' | 'peakBytes'> | null = best;
      for (const [k, q] of points.entries()) {
        if (k === j || stopped[k] || times[k]!.length < 3) continue;
        const sps = samplesPerSecondAt(G, q.m, fastestHalf(times[k]!).stepMs);
        if (ref === null || sps > ref.samplesPerSecond!)
          ref = { samplesPerSecond: sps, peakBytes: fitPeak(q.w.r, q.m) };
      }
      return ref === null ? undefined : limitAgainst(fitPeak(points[j]!.w.r, points[j]!.m), points[j]!.m, ref);
    };
  /**
   * Points timed side by side (timeSideBySide: as many steps each as alone, in turn, each with its
   * own early stop, against the best so far and the others under the same load). Every two of them
   * that both ran to the end are settled as a tie by this timing (sideBySide).
   */
  const timeGroup = async (points: readonly Point[]): Promise<TuneRow[]> => {
    const peaks = points.map((p) => peakAtMost(p.w.r.trials, p.m));
    await kept.makeRoom(peaks);
    const sides = await timeSideBySide(
      points.map((p) => stepAt(p.w.c, p.m)),
      steps,
      limitsIn(points),
    );
    const rows = points.map((p, j) => {
      const t = sides[j]!;
      const others = points.filter((_, k) => k !== j);
      const with_ = others.every((q) => q.m === p.m)
        ? `${others.map((q) => q.w.c.label).join(', ')} at ${p.m}`
        : others.map((q) => `${q.w.c.label} at ${q.m}`).join(', ');
      return rowOf(
        p.w.c,
        p.w.r,
        p.m,
        t,
        t.stoppedEarly,
        t.stoppedBy ? stopNote(t.times, t.stoppedBy) : `timed side by side with ${with_}, alternately`,
      );
    });
    for (const [j, p] of points.entries())
      record(p.w.c, rows[j]!, sides[j]!.stoppedEarly, sides[j]!.open, peaks[j] ?? null);
    for (let j = 0; j < rows.length; j++)
      for (let k = j + 1; k < rows.length; k++)
        if (!sides[j]!.stoppedEarly && !sides[k]!.stoppedEarly) sideBySide.push([keyOf(rows[j]!), keyOf(rows[k]!)]);
    await keepOnly([...byCandidate.values()].flat());
    return rows;
  };
  /**
   * A candidate's walk over its micro-batches (MicroWalk), and beside it, when given, a second
   * one's: their opening two micro-batches (the start and the first step up, taken whatever the
   * timings say), when both open on the same two and the four sessions can be held at once, are
   * timed all four side by side, so that each tier's slope and the two tiers at each m are compared
   * under one load; after that, where both take the same m next and their two sessions can be held
   * at once, the two are timed side by side; otherwise the first goes on alone, then the second.
   */
  const walkAll = async (a: Walker, b: Walker | null): Promise<void> => {
    const opening = a.walk.opening();
    if (b !== null && opening.length === 2 && b.walk.opening().join() === opening.join()) {
      const points = opening.flatMap((m) => [a, b].map((w) => ({ w, m })));
      if (
        holdable(
          points.map((p) => peakAtMost(p.w.r.trials, p.m)),
          kept.holdBytes,
        )
      ) {
        const rows = await timeGroup(points);
        for (const [j, p] of points.entries()) p.w.walk.took(rows[j]!.samplesPerSecond!);
      }
    }
    for (;;) {
      const ma = a.walk.next();
      const mb = b === null ? null : b.walk.next();
      if (ma === null && mb === null) return;
      if (
        b !== null &&
        ma !== null &&
        ma === mb &&
        holdable([peakAtMost(a.r.trials, ma), peakAtMost(b.r.trials, ma)], kept.holdBytes)
      ) {
        const [ra, rb] = await timeGroup([
          { w: a, m: ma },
          { w: b, m: ma },
        ]);
        a.walk.took(ra!.samplesPerSecond!);
        b.walk.took(rb!.samplesPerSecond!);
      } else if (ma !== null) a.walk.took((await timeAt(a.c, a.r, ma)).samplesPerSecond!);
      else b!.walk.took((await timeAt(b!.c, b!.r, mb!)).samplesPerSecond!);
    }
  };
  const walkerOf = (c: Candidate<T>, r: R, floor: number): Walker => ({
    c,
    r,
    walk: MicroWalk.over(divisors.filter((d) => d <= r.batchSize && d > floor).sort((x, y) => x - y)),
  });
  /**
   * The candidate to walk beside the first (pairedStart: the second, as light, as no checkpointing
   * and selective), fitted now; null when it fits nothing (its own turn then says so).
   */
  const mateOf = async (k: number): Promise<Walker | null> => {
    if (!pairedStart || k !== 0) return null;
    const d = candidates[1]!;
    const r = await fitOf(d, 0);
    fitAhead.set(d, r);
    if (r === null) return null;
    fitted.set(d, { r, floor: 0 });
    return walkerOf(d, r, 0);
  };
  /** The lighter candidate that fits the largest micro-batch (`max`), a heavier one's floor. */
  type Lighter = { c: Candidate<T>; max: number };
  const skippedRow = (c: Candidate<T>, note: string): TuneRow => ({
    label: c.label,
    values: c.values,
    microBatchSize: null,
    accumulation: null,
    peakBytes: null,
    stepMs: null,
    noiseMs: null,
    samplesPerSecond: null,
    note,
  });
  /**
   * A heavier candidate timed before its fit where timeFirstAt allows (time-first: on the CPU, its
   * one micro-batch above `lighter`'s largest), and fitted only when it can win; true when it was
   * (its row is recorded), false when it is to be fitted first.
   */
  const timedBeforeFit = async (c: Candidate<T>, lighter: Lighter | null): Promise<boolean> => {
    const ref = best;
    if (lighter === null || ref === null || fitAhead.has(c)) return false;
    const floor = lighter.max;
    const first = timeFirstAt({
      device: o.device.kind,
      divisors,
      floor,
      lighterPeak: fitPeak(fitted.get(lighter.c)!.r, floor),
      holdBytes: kept.holdBytes,
    });
    if (first === null) return false;
    const { m, boundBytes } = first;
    const limit = limitAgainst(null, m, ref); // its peak is not measured yet: the wider margin
    await kept.makeRoom([boundBytes]);
    const got = await timeThenFit({
      time: () =>
        timeTrainStep({ ...stepAt(c, m), steps, cannotWinAboveMs: limit.cannotWinAboveMs, margin: limit.margin }),
      fit: () => fitOf(c, floor),
      fitsAt: (r) => r.batchSize === m,
    });
    const held =
      `timed before its fit (on the CPU this process can hold its step: at most ` +
      `${formatBytes(boundBytes)}, twice ${lighter.c.label}'s peak at ${floor} scaled to ${m})`;
    if (got.kind === 'cannot-win') {
      const row = rowOf(
        c,
        null,
        m,
        got.timing,
        true,
        `${stopNote(got.timing.times, limit)}; ${held}, so never fitted: it cannot win whether it fits or not`,
      );
      record(c, row, true, null, null);
    } else if (got.kind === 'does-not-fit') {
      const sps = samplesPerSecondAt(G, m, got.timing.stepMs).toFixed(1);
      byCandidate
        .get(c)!
        .push(
          skippedRow(
            c,
            `cannot win: ${m} does not fit (${lighter.c.label} fits up to ${floor} and does less work); ${held}: ` +
              `${sps} samples/s, not counted`,
          ),
        );
    } else {
      fitted.set(c, { r: got.fit, floor });
      record(c, rowOf(c, got.fit, m, got.timing, false, held), false, null, fitPeak(got.fit, m));
    }
    return true;
  };
  try {
    for (const [k, c] of candidates.entries()) {
      if (fitAhead.get(c)) continue; // walked beside the one before it
      const skipped = (note: string): void => void byCandidate.get(c)!.push(skippedRow(c, note));
      const lighters = lighterThan(c).filter((x) => fitted.has(x));
      const lighter = lighters.reduce<Lighter | null>(
        (a, x) => (a === null || fitted.get(x)!.r.batchSize > a.max ? { c: x, max: fitted.get(x)!.r.batchSize } : a),
        null,
      );
      if (lighter !== null && lighter.max >= G) {
        skipped(`cannot win: ${lighter.c.label} fits every micro-batch up to ${G} and does less work`);
        continue;
      }
      const pastOf = () =>
        lighters.map((x) => pastItsBest(byCandidate.get(x)!, fitted.get(x)!.r.batchSize)).find((p) => p !== null);
      // Before it is decided on first timings, a tie that decides it is timed again (settleSlope).
      if (lighters.length > 0 && !pastOf()) await settleSlope(lighters);
      const past = pastOf();
      if (past) {
        const { top, below } = past;
        const retimedNote = retimedEarly.some(([a, b]) => a === keyOf(below) && b === keyOf(top))
          ? ', timed again side by side'
          : '';
        skipped(
          `cannot win: ${top.label} is slower at ${top.microBatchSize} than at ${below.microBatchSize} (` +
            `${top.samplesPerSecond!.toFixed(1)} vs ${below.samplesPerSecond!.toFixed(1)} samples/s${retimedNote}` +
            `), ` +
            `so slower still above ${top.microBatchSize}, and this does more work at every micro-batch`,
        );
        continue;
      }
      if (await timedBeforeFit(c, lighter)) continue;
      const r = await fitOf(c, lighter?.max ?? 0);
      if (r === null) {
        skipped(
          lighter === null
            ? 'no micro-batch fits'
            : `cannot win: no micro-batch above ${lighter.max} fits (${lighter.c.label} fits up to ${lighter.max}` +
                ` and does less work)`,
        );
        continue;
      }
      const floor = lighter?.max ?? 0;
      fitted.set(c, { r, floor });
      // Its micro-batches from half its largest up while faster, else down (MicroWalk); the first
      // two as light as each other side by side where they take the same m.
      const mate = await mateOf(k);
      await walkAll(walkerOf(c, r, floor), mate);
      // the table: largest m first
      for (const x of [c, mate?.c]) if (x) byCandidate.get(x)!.sort((u, v) => v.microBatchSize! - u.microBatchSize!);
    }
    const firstRows = [...byCandidate.values()].flat(); // the table in candidate order
    // A row stopped early lost by a margin and has no noise estimate: it does not compete. A tie the
    // lower peak would take from a faster row is timed again first, the two side by side (settle-tie).
    ({ choice, rows } = await chooseSettled({
      rows: firstRows,
      globalBatchSize: G,
      excluded: excludedOf(firstRows),
      retime,
      maxRetimes: MAX_RETIMES,
      retimed: retimedEarly.map(indicesIn(firstRows)),
      sideBySide: sideBySide.map(indicesIn(firstRows)),
    }));
  } finally {
    await kept.releaseAll();
  }
  if (choice.chosen === null) throw new NothingChosenError(`${what}: auto: no choice could be timed`);
  const entry: TuneEntry = {
    chosen: choice.chosen,
    reason: withEarlyStops(choice.reason, rows),
    rows,
    globalBatchSize: G,
    worldSize: 1,
    timeSteps: steps,
    budgetBytes: o.budgetBytes,
    gpuName: o.gpuName,
    gpuMemoryGb: o.gpuMemoryGb,
    command: o.command,
    savedAt: new Date().toISOString(),
  };
  if (!o.noCache) await saveTuneEntry(key, entry, location);
  // The chosen candidate's search: its resolution when the choice is its largest m, and its fit trial at the chosen m.
  const chosenRow = rows[choice.chosen]!;
  const fit = [...fitted].find(([c]) => c.label === chosenRow.label)?.[1].r;
  const m = chosenRow.microBatchSize!;
  return result(
    entry,
    'measured',
    fit?.batchSize === m ? fit : null,
    fit?.trials.filter((x) => x.batch_size === m && x.result === 'fit').pop() ?? null,
  );
}
