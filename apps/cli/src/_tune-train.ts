// `gradient_checkpointing: auto` in soup train / soup plan: a measured choice. Each tier (off,
// selective, full) gets its largest micro-batch m (a divisor of G that fits, the batch cache
// first for the lightest tier; a heavier tier only above what the lighter ones fit); its step is
// timed in this process (a warm-up, then timed steps) from m / 2 up while faster, else down while
// faster (on a CPU the largest m is not always the fastest per sample). A heavier tier is not
// tried at all when a lighter one is already past its best micro-batch (pastItsBest). The most
// samples per second at G wins, a tie within the noise going to the lower peak, once the two are
// timed again side by side (_tune-tie), on their sessions kept warm from the first timing; the tie
// that decides whether a lighter candidate is past its best is timed again before a heavier one is
// searched. The choice is remembered in the tune cache.
import { divisorsOf, formatMicroBatch, NoBatchFitsError, lookupTuneEntry, makeTuneKey, saveTuneEntry, type TuneEntry, type TuneRow } from '@soup/batch-probe';
import type { Granularity } from '@soup/grad-ckpt';
import { createTrainStep, makeSyntheticBatch, type GptSpec } from '@soup/onnx-train';
import type { BatchResolution, TrialView } from './_batch';
import type { CommandContext } from './_context';
import { cacheBaseOf, recomputeOf, type OffloadPlan } from './_plan';
import { formatBytes } from './format-bytes';
import { printTable, withEarlyStops } from './_tune-exec';
import { holdable, holdBytesOf, KeptSessions, peakAtMost } from './_tune-hold';
import { chooseSettled, rowsToKeep, tieOver, timeTieAgain, type Retiming } from './_tune-tie';
import type { SoupConfig } from './validate-config';

export const TRAIN_TIERS: readonly (Granularity | null)[] = [null, 'selective', 'full'];
const nameOf = (g: Granularity | null): string => g ?? 'false';

/**
 * Step time (ms) of `steps` steps after a warm-up: the mean of the fastest half, and its noise (the
 * standard error of that mean). On a shared machine a neighbour's work only ever adds time, and the
 * first steps after the warm-up are still growing the allocator (at m = 16 on the small template:
 * 488, 426, then 348–363 ms), so the fastest half is the step's own cost and repeats within 2–3 %
 * where the median of the same runs moved 10 %. With `cannotWinAboveMs` (the step time at which this
 * candidate would only tie the best so far), timing stops after three steps whose fastest is more
 * than `margin` above it (`stoppedEarly`). In 25 timings on the small template (5 × off/selective
 * at 16 and 8, off at 4) the fastest of the first three steps was 0.97–1.06× the settled time (the
 * mean of the fastest half of 6), so a stop at 5 % leaves a candidate at most about 1 % faster
 * than the best; 10 % leaves none.
 */
export async function timeTrainStep(
  o: StepToTime & {
    steps: number;
    cannotWinAboveMs?: number;
    /** @default 0.1 */
    margin?: number;
    /**
     * Hand back the warm session instead of releasing it (`open`; the caller releases it). Not when
     * timing stopped early: that session is released here.
     */
    keepOpen?: boolean;
  },
): Promise<{ stepMs: number; noiseMs: number; times: number[]; stoppedEarly: boolean; open: OpenStep | null }> {
  const opened = await openWarmStep(o);
  let kept = false;
  try {
    const times: number[] = [];
    let stoppedEarly = false;
    for (let i = 0; i < o.steps; i++) {
      times.push((await opened.step.run(opened.batch)).totalMs);
      // The fastest of three steps over what it needs to win, by the margin: it cannot. (Not fewer:
      // the first steps after the warm-up can be 20–40 % slow while the allocator still grows.)
      if (o.cannotWinAboveMs !== undefined && times.length === 3 && Math.min(...times) > o.cannotWinAboveMs * (1 + (o.margin ?? 0.1))) {
        stoppedEarly = true;
        break;
      }
    }
    kept = o.keepOpen === true && !stoppedEarly;
    return { ...fastestHalf(times), times, stoppedEarly, open: kept ? opened : null };
  } finally {
    if (!kept) await opened.step.release();
  }
}

/**
 * What one timing session runs: a template, its recompute set and offload, at one micro-batch, on
 * the device the run trains on (`executionProvider`, `deviceId`: soup.yaml's `device`). Required,
 * not defaulted: a timing on the CPU says nothing about a step on the GPU.
 */
export interface StepToTime {
  spec: GptSpec;
  recompute: string[];
  batchSize: number;
  threads: number;
  offload: OffloadPlan | null;
  cwd: string;
  executionProvider: 'cpu' | 'cuda';
  deviceId: number;
}

/** A warm training step session and its synthetic batch (openWarmStep); whoever opened it releases it. */
export interface OpenStep {
  step: Awaited<ReturnType<typeof createTrainStep>>;
  batch: ReturnType<typeof makeSyntheticBatch>;
}

/** A training step session for `o`, its synthetic batch, and one warm-up step run (the runtime's first-run allocations). */
export async function openWarmStep(o: StepToTime): Promise<OpenStep> {
  const step = await createTrainStep({
    spec: o.spec,
    seed: 0,
    recompute: o.recompute,
    executionProvider: o.executionProvider,
    deviceId: o.deviceId,
    ...(o.threads > 0 ? { intraOpNumThreads: o.threads } : {}),
    ...(o.offload ? { offload: { target: o.offload.target, ...(o.offload.saveDir ? { saveDir: o.offload.saveDir } : {}), cwd: o.cwd } } : {}),
  });
  try {
    const batch = makeSyntheticBatch({ spec: o.spec, batchSize: o.batchSize, seed: 1 });
    await step.run(batch);
    return { step, batch };
  } catch (err) {
    await step.release();
    throw err;
  }
}

/**
 * Two step sessions timed against each other: both open and warm (a side given as an OpenStep, a
 * session kept from its first timing, is used as it is: no new session, no warm-up, and it is not
 * released here), then `steps` rounds of one step each, in the order AB, BA, AB, … so that what the
 * machine does meanwhile (a neighbour, a frequency change) falls on both alike. Each side: the mean
 * of its fastest half and its standard error, as timeTrainStep. Both sessions are held at once (the
 * soup process, not a probe child).
 */
export async function timeAlternately(a: StepToTime | OpenStep, b: StepToTime | OpenStep, steps: number): Promise<[{ stepMs: number; noiseMs: number }, { stepMs: number; noiseMs: number }]> {
  const opened: OpenStep[] = [];
  const sides: OpenStep[] = [];
  try {
    for (const p of [a, b]) {
      if ('step' in p) sides.push(p);
      else {
        const s = await openWarmStep(p);
        opened.push(s);
        sides.push(s);
      }
    }
    const times: [number[], number[]] = [[], []];
    for (let i = 0; i < steps; i++) {
      for (const j of i % 2 === 0 ? [0, 1] : [1, 0]) times[j]!.push((await sides[j]!.step.run(sides[j]!.batch)).totalMs);
    }
    return [fastestHalf(times[0]), fastestHalf(times[1])];
  } finally {
    for (const s of opened) await s.step.release();
  }
}

/** Mean of the fastest half of `times` and its standard error (0 with one value). */
export function fastestHalf(times: readonly number[]): { stepMs: number; noiseMs: number } {
  const fast = [...times].sort((a, b) => a - b).slice(0, Math.max(1, Math.ceil(times.length / 2)));
  const mean = fast.reduce((a, b) => a + b, 0) / fast.length;
  if (fast.length < 2) return { stepMs: mean, noiseMs: 0 };
  const sd = Math.sqrt(fast.reduce((a, t) => a + (t - mean) ** 2, 0) / (fast.length - 1));
  return { stepMs: mean, noiseMs: sd / Math.sqrt(fast.length) };
}

/**
 * A candidate's rows past its best micro-batch: the largest m it timed (at most `top`, the largest
 * that fits) has fewer samples/s than the next smaller m it timed. The search assumes one best
 * micro-batch per candidate, slower on either side (it stops at the first slower m); by the same
 * assumption every m above is slower still per sample, and a candidate that does more work at
 * every micro-batch (full checkpointing, an offload) is slower than that, so it cannot win above.
 * Null when fewer than two were timed or the largest is not slower.
 */
export function pastItsBest(rows: readonly TuneRow[], top: number): { top: TuneRow; below: TuneRow } | null {
  const [atTop, below] = rows.filter((r) => r.microBatchSize !== null && r.samplesPerSecond !== null && r.microBatchSize <= top).sort((a, b) => b.microBatchSize! - a.microBatchSize!);
  return atTop && below && atTop.samplesPerSecond! < below.samplesPerSecond! ? { top: atTop, below } : null;
}

export interface TrainTuneResult {
  entry: TuneEntry;
  source: 'measured' | 'cache';
  granularity: Granularity | null;
  recompute: string[];
  /** The chosen activation offload (null: none). */
  offload: OffloadPlan | null;
  microBatchSize: number;
  /** The chosen candidate's batch resolution (null from the tune cache). */
  resolution: BatchResolution | null;
  /** The fit trial at the chosen candidate and micro-batch, when the search ran one there. */
  measured: TrialView | null;
}

const offloadName = (p: OffloadPlan | null): string => p?.target ?? 'null';
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
const workRank = (g: Granularity | null): number => (g === 'full' ? 1 : 0);

/** One candidate: a tier and an offload; `rank`: how far each lever is from the lightest. */
interface Candidate {
  g: Granularity | null;
  offload: OffloadPlan | null;
  rank: [number, number];
  label: string;
  values: Record<string, string>;
  recompute: string[];
}

/**
 * Chooses the tier (and, with `activation_offloading: auto`, the offload) by measured speed; see
 * the file comment. `tiers` and `offloads` list the choices, lightest first.
 */
export async function tuneTrain(o: {
  ctx: CommandContext;
  config: SoupConfig;
  spec: GptSpec;
  tiers: readonly (Granularity | null)[];
  offloads: readonly (OffloadPlan | null)[];
  budgetBytes: number | null;
  gpuName: string;
  gpuMemoryGb: number;
  noCache: boolean;
  /**
   * The largest fitting divisor of G for a recompute set and offload, searching only above `floor`
   * when given (a divisor the fits' peaks put well over the budget is not tried: see
   * probeMicroBatchSize's `predictStop`).
   */
  resolveMicro(recompute: string[], floor: number, offload: OffloadPlan | null): Promise<BatchResolution>;
  /** Timed steps per candidate after the warm-up. @default 6 */
  steps?: number;
}): Promise<TrainTuneResult> {
  const { ctx, config } = o;
  const G = config.training.batchSize;
  const withOffload = config.training.activationOffloading === 'auto';
  const tries: Record<string, string[]> = { gradient_checkpointing: o.tiers.map(nameOf) };
  if (withOffload) tries.activation_offloading = o.offloads.map(offloadName);
  const key = makeTuneKey({
    command: `soup train ${cacheBaseOf(config, [], withOffload ? null : undefined)} threads ${config.training.threads}`,
    tries,
    globalBatchSize: G,
    worldSize: 1,
    budgetBytes: o.budgetBytes,
    gpuName: o.gpuName,
    gpuMemoryGb: o.gpuMemoryGb,
  });
  const what = [o.tiers.length > 1 ? 'gradient_checkpointing' : null, withOffload ? 'activation_offloading' : null].filter((x) => x !== null).join(' and ');
  const location = { env: ctx.env, cwd: ctx.cwd };
  const candidates: Candidate[] = o.offloads.flatMap((off, oi) =>
    o.tiers.map((g, gi) => {
      const values: Record<string, string> = { gradient_checkpointing: nameOf(g) };
      if (withOffload) values.activation_offloading = offloadName(off);
      return {
        g,
        offload: off,
        rank: [workRank(g), oi] as [number, number],
        values,
        label: Object.entries(values).map(([k, v]) => `${k}=${v}`).join(', '),
        recompute: recomputeOf(config, g),
      };
    }),
  );
  /** The candidate a row measured: by its label, else by its lever values. */
  const candidateOf = (r: TuneRow): Candidate =>
    candidates.find((x) => x.label === r.label) ?? candidates.find((x) => Object.entries(x.values).every(([k, v]) => r.values[k] === v))!;
  const result = (entry: TuneEntry, source: 'measured' | 'cache', resolution: BatchResolution | null, measured: TrialView | null): TrainTuneResult => {
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
      ctx.say(`${what}: auto, from the tune cache (measured ${hit.savedAt.replace(/\.\d+Z$/, 'Z')}; --no-cache to measure again):`);
      printTable(ctx, hit);
      return result(hit, 'cache', null, null);
    }
  }
  const steps = o.steps ?? 6;
  ctx.say(
    `${what}: auto, measured: each choice's largest micro-batch (a divisor of ${G}) that fits, then its steps timed (a warm-up, then ${steps} steps; ` +
      `the mean of the fastest half) from half that micro-batch up while faster, else down while faster; full checkpointing and an offload are tried only where the lighter choices do not fit, and not when a lighter one is already slower at its largest micro-batch than below it; ` +
      `a tie that the lower peak would take from a faster one is timed again, the two alternately`,
  );
  const byCandidate = new Map<Candidate, TuneRow[]>(candidates.map((c) => [c, []]));
  // Every step is timed on the device the run trains on.
  const deviceOf = { executionProvider: config.device.kind, deviceId: config.device.id };
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
  const fitted = new Map<Candidate, { r: BatchResolution; floor: number }>();
  const lighterThan = (c: Candidate): Candidate[] =>
    candidates.filter((x) => x !== c && x.rank[0] <= c.rank[0] && x.rank[1] <= c.rank[1] && (x.rank[0] < c.rank[0] || x.rank[1] < c.rank[1]));
  let best: TuneRow | null = null;
  const stopped = new Set<TuneRow>();
  let choice: Awaited<ReturnType<typeof chooseSettled>>['choice'];
  let rows: TuneRow[];
  // Warm sessions kept from their first timing, by row (label and m): those of the rows a tie's
  // second timing would take now (rowsToKeep: the fastest, and the row that would take a tie from
  // it), so that it needs no new session and no warm-up. At most two, beside the one being timed,
  // and only while the sessions held at once fit `holdBytes` (_tune-hold: on a GPU, the budget).
  const kept = new KeptSessions<OpenStep>(holdBytesOf(config.device.kind, o.budgetBytes));
  const keyOf = (r: TuneRow): string => `${r.label}\u0000${r.microBatchSize}`;
  /** A row's peak, or a bound on it from its candidate's fits at a larger m. */
  const peakOf = (r: TuneRow): number | null => r.peakBytes ?? peakAtMost(fitted.get(candidateOf(r))?.r.trials ?? [], r.microBatchSize!);
  /** The indices of `rows` stopped early: they do not compete. */
  const excludedOf = (rows: readonly TuneRow[]): Set<number> => new Set(rows.flatMap((r, i) => (stopped.has(r) ? [i] : [])));
  const keepOnly = async (rows: readonly TuneRow[]): Promise<void> => {
    const toKeep = rowsToKeep(rows, G, excludedOf(rows)).map((i) => rows[i]!);
    // A pair that cannot be held together is not timed side by side: keep the faster (the last) alone.
    await kept.keepOnly(new Set((holdable(toKeep.map(peakOf), kept.holdBytes) ? toKeep : toKeep.slice(-1)).map(keyOf)));
  };
  const stepOf = (r: TuneRow): StepToTime => {
    const c = candidateOf(r);
    return { ...deviceOf, spec: o.spec, recompute: c.recompute, batchSize: r.microBatchSize!, threads: config.training.threads, offload: c.offload, cwd: ctx.cwd };
  };
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
      ctx.say(ctx.style.dim(`${at(a)} and ${at(b)} are within the noise, the lower peak on the slower, but their two sessions do not fit together (${shown} over ${formatBytes(kept.holdBytes)}): not timed side by side, the faster stands`));
      return null;
    }
    await kept.makeRoom(peaks, new Set([keyOf(a), keyOf(b)]));
    const [sa, sb] = [kept.get(keyOf(a)), kept.get(keyOf(b))];
    const t = await timeAlternately(sa ?? stepOf(a), sb ?? stepOf(b), RETIME_ROUNDS);
    const warm = sa && sb ? 'both sessions kept warm from their first timing' : sa || sb ? 'one session kept warm from its first timing' : 'two new sessions';
    ctx.say(ctx.style.dim(`${at(a)} and ${at(b)} are within the noise, the lower peak on the slower: timed again side by side (${RETIME_ROUNDS} rounds, ${warm}, ${((performance.now() - t0) / 1000).toFixed(1)} s)`));
    return t;
  };
  /**
   * Before a heavier candidate is fitted: when the tie that the end would time again is a lighter
   * candidate's largest timed m (the faster) against the m below it (the lower peak), that tie
   * decides whether the lighter one is past its best, so it is timed again now and its rows take
   * the second timing's figures (the end does not time it again).
   */
  const settleSlope = async (lighters: readonly Candidate[]): Promise<void> => {
    const all = [...byCandidate.values()].flat();
    const pair = tieOver(all, G, excludedOf(all));
    if (pair === null || retimedEarly.length >= MAX_RETIMES) return;
    const [i, j] = pair;
    const x = lighters.find((l) => candidateOf(all[i]!) === l && candidateOf(all[j]!) === l);
    if (!x) return;
    const [top, below] = byCandidate
      .get(x)!
      .filter((r) => r.microBatchSize !== null && r.samplesPerSecond !== null && r.microBatchSize <= fitted.get(x)!.r.batchSize)
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
  try {
    for (const c of candidates) {
      const skipped = (note: string): void =>
        void byCandidate.get(c)!.push({ label: c.label, values: c.values, microBatchSize: null, accumulation: null, peakBytes: null, stepMs: null, noiseMs: null, samplesPerSecond: null, note });
      const lighters = lighterThan(c).filter((x) => fitted.has(x));
      const lighter = lighters.reduce<{ max: number; label: string } | null>(
        (a, x) => (a === null || fitted.get(x)!.r.batchSize > a.max ? { max: fitted.get(x)!.r.batchSize, label: x.label } : a),
        null,
      );
      if (lighter !== null && lighter.max >= G) {
        skipped(`cannot win: ${lighter.label} fits every micro-batch up to ${G} and does less work`);
        continue;
      }
      const pastOf = () => lighters.map((x) => pastItsBest(byCandidate.get(x)!, fitted.get(x)!.r.batchSize)).find((p) => p !== null);
      // Before it is decided on first timings, a tie that decides it is timed again (settleSlope).
      if (lighters.length > 0 && !pastOf()) await settleSlope(lighters);
      const past = pastOf();
      if (past) {
        const { top, below } = past;
        const sideBySide = retimedEarly.some(([a, b]) => a === keyOf(below) && b === keyOf(top)) ? ', timed again side by side' : '';
        skipped(
          `cannot win: ${top.label} is slower at ${top.microBatchSize} than at ${below.microBatchSize} (${top.samplesPerSecond!.toFixed(1)} vs ${below.samplesPerSecond!.toFixed(1)} samples/s${sideBySide}), ` +
            `so slower still above ${top.microBatchSize}, and this does more work at every micro-batch`,
        );
        continue;
      }
      let r: BatchResolution | null = null;
      try {
        r = await o.resolveMicro(c.recompute, lighter?.max ?? 0, c.offload);
      } catch (err) {
        if (!(err instanceof NoBatchFitsError)) throw err;
      }
      if (r === null) {
        skipped(lighter === null ? 'no micro-batch fits' : `cannot win: no micro-batch above ${lighter.max} fits (${lighter.label} fits up to ${lighter.max} and does less work)`);
        continue;
      }
      const floor = lighter?.max ?? 0;
      fitted.set(c, { r, floor });
      // Time it from half its largest m (above its floor) up while faster, and down while faster
      // when the first step up was not: the same micro-batches as from the largest down, but the
      // largest, its dearest point, is timed after a cheaper one, so that it too can stop early. One that cannot reach the best so far stops after three steps (see timeTrainStep):
      // by 5 % when its peak is above the best's (it cannot win a tie, which goes to the lower
      // peak), else by 10 %.
      const timeAt = async (m: number): Promise<TuneRow> => {
        const accumulation = G / m;
        const peakBytes = r.trials.find((x) => x.batch_size === m && x.result === 'fit')?.peak_bytes ?? null;
        const needMs: number | null = best === null ? null : (G / (accumulation * best.samplesPerSecond!)) * 1000;
        const margin = best !== null && peakBytes !== null && best.peakBytes !== null && peakBytes > best.peakBytes ? 0.05 : 0.1;
        const peak = peakAtMost(r.trials, m);
        await kept.makeRoom([peak]);
        const t = await timeTrainStep({
          ...deviceOf,
          spec: o.spec,
          recompute: c.recompute,
          batchSize: m,
          threads: config.training.threads,
          offload: c.offload,
          steps,
          cwd: ctx.cwd,
          ...(needMs !== null ? { cannotWinAboveMs: needMs, margin } : {}),
          keepOpen: true,
        });
        const row: TuneRow = {
          label: c.label,
          values: c.values,
          microBatchSize: m,
          accumulation,
          peakBytes,
          stepMs: t.stepMs,
          noiseMs: t.stoppedEarly ? null : t.noiseMs,
          samplesPerSecond: G / ((accumulation * t.stepMs) / 1000),
          note: t.stoppedEarly
            ? `stopped early: cannot win (its fastest of 3 steps, ${Math.min(...t.times).toFixed(0)} ms, is over ${needMs!.toFixed(0)} ms + ${margin * 100} %${margin < 0.1 ? ', and its peak is above the best\'s' : ''})`
            : null,
        };
        byCandidate.get(c)!.push(row);
        if (t.stoppedEarly) stopped.add(row);
        else if (best === null || row.samplesPerSecond! > best.samplesPerSecond!) best = row;
        if (t.open) kept.keep(keyOf(row), t.open, peak);
        await keepOnly([...byCandidate.values()].flat());
        return row;
      };
      const allowed = divisors.filter((d) => d <= r.batchSize && d > floor).sort((x, y) => x - y);
      const startAt = Math.max(0, allowed.filter((d) => d <= r.batchSize / 2).length - 1);
      // Times `ms` in order from `from` while each is faster than the one before; true when one was.
      const climb = async (ms: readonly number[], from: TuneRow): Promise<boolean> => {
        let prev = from;
        for (const m of ms) {
          const row = await timeAt(m);
          if (row.samplesPerSecond! <= prev.samplesPerSecond!) break; // slower: those beyond it are not tried
          prev = row;
        }
        return prev !== from;
      };
      const start = await timeAt(allowed[startAt]!);
      if (!(await climb(allowed.slice(startAt + 1), start))) await climb(allowed.slice(0, startAt).reverse(), start);
      byCandidate.get(c)!.sort((x, y) => y.microBatchSize! - x.microBatchSize!); // the table: largest m first
    }
    const firstRows = [...byCandidate.values()].flat(); // the table in candidate order
    // A row stopped early lost by a margin and has no noise estimate: it does not compete. A tie the
    // lower peak would take from a faster row is timed again first, the two side by side (_tune-tie).
    ({ choice, rows } = await chooseSettled({
      rows: firstRows,
      globalBatchSize: G,
      excluded: excludedOf(firstRows),
      retime,
      maxRetimes: MAX_RETIMES,
      retimed: retimedEarly.map(([a, b]): [number, number] => [firstRows.findIndex((r) => keyOf(r) === a), firstRows.findIndex((r) => keyOf(r) === b)]),
    }));
  } finally {
    await kept.releaseAll();
  }
  if (choice.chosen === null) throw new Error(`${what}: auto: no choice could be timed`);
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
    command: `soup train (${config.base})`,
    savedAt: new Date().toISOString(),
  };
  printTable(ctx, entry);
  if (!o.noCache) await saveTuneEntry(key, entry, location);
  // The chosen candidate's search: its resolution when the choice is its largest m, and its fit trial at the chosen m.
  const chosenRow = rows[choice.chosen]!;
  const fit = [...fitted].find(([c]) => c.label === chosenRow.label)?.[1].r;
  const m = chosenRow.microBatchSize!;
  return result(entry, 'measured', fit?.batchSize === m ? fit : null, fit?.trials.filter((x) => x.batch_size === m && x.result === 'fit').pop() ?? null);
}

/** The shape line of a chosen tier (`lever`: gradient_checkpointing's or activation_offloading's). */
export function describeChoice(r: TrainTuneResult, G: number, lever: 'tier' | 'offload' = 'tier'): string {
  const value = lever === 'tier' ? (r.granularity ?? 'off') : (r.offload?.target ?? 'off');
  return `auto → ${value} (measured: ${formatMicroBatch({ microBatchSize: r.microBatchSize, accumulation: G / r.microBatchSize })}, ${r.entry.rows[r.entry.chosen]!.samplesPerSecond!.toFixed(1)} samples/s${r.source === 'cache' ? ', from the tune cache' : ''})`;
}
