// tuneTrain's search, as tune() runs it: each candidate, lightest first, fitted and walked over its
// micro-batches (the first two beside each other); a heavier one not tried when a lighter one
// shows it cannot win, and on the CPU timed before it is fitted where that is cheaper (time-first).
// It gives tune() its rows, the pairs already timed side by side or again, and how a tie is timed
// again; tune() makes the choice.
import { formatBytes } from '@soup/batch-probe';
import {
  allRows,
  type Candidate,
  excludedOf,
  fitOf,
  fitPeak,
  indicesIn,
  keyOf,
  limitAgainst,
  type MicroFit,
  record,
  rowOf,
  skippedRow,
  stepAt,
  stopNote,
  type TrainState,
  updateOf,
  perSecondAt,
} from './_train-state';
import { MAX_RETIMES, retime, settleSlope } from './_train-ties';
import { type Walker, walkAll, walkerOf } from './_train-walk';
import { pastItsBest } from './past-its-best';
import { timeTrainStep } from './step-timing';
import { timeFirstAt, timeThenFit } from './time-first';
import type { TuneSearch } from './tune';

/** The lighter candidate that fits the largest micro-batch (`max`), a heavier one's floor. */
type Lighter<T extends string> = { c: Candidate<T>; max: number };

/** The candidates that do no more work than c on either lever, and less on one. */
const lighterThan = <T extends string>(candidates: readonly Candidate<T>[], c: Candidate<T>): Candidate<T>[] =>
  candidates.filter(
    (x) =>
      x !== c && x.rank[0] <= c.rank[0] && x.rank[1] <= c.rank[1] && (x.rank[0] < c.rank[0] || x.rank[1] < c.rank[1]),
  );

/** Whether the first two candidates are as light as each other (no checkpointing and selective): they walk together. */
export const pairedStartOf = <T extends string>(candidates: readonly Candidate<T>[]): boolean =>
  candidates.length > 1 && candidates[0]!.rank.join() === candidates[1]!.rank.join();

/**
 * The candidate to walk beside the first (pairedStart: the second, as light, as no checkpointing
 * and selective), fitted now; null when it fits nothing (its own turn then says so).
 */
const mateOf = async <T extends string, R extends MicroFit>(
  s: TrainState<T, R>,
  k: number,
): Promise<Walker<T, R> | null> => {
  if (!pairedStartOf(s.candidates) || k !== 0) return null;
  const d = s.candidates[1]!;
  const r = await fitOf(s, d, 0);
  s.fitAhead.set(d, r);
  if (r === null) return null;
  s.fitted.set(d, { r, floor: 0 });
  return walkerOf(s, d, r, 0);
};

/**
 * A heavier candidate timed before its fit where timeFirstAt allows (time-first: on the CPU, its
 * one micro-batch above `lighter`'s largest), and fitted only when it can win; true when it was
 * (its row is recorded), false when it is to be fitted first.
 */
const timedBeforeFit = async <T extends string, R extends MicroFit>(
  s: TrainState<T, R>,
  c: Candidate<T>,
  lighter: Lighter<T> | null,
): Promise<boolean> => {
  const ref = s.best;
  if (lighter === null || ref === null || s.fitAhead.has(c)) return false;
  const floor = lighter.max;
  const first = timeFirstAt({
    device: s.o.device.kind,
    divisors: s.divisors,
    floor,
    lighterPeak: fitPeak(s.fitted.get(lighter.c)!.r, floor),
    holdBytes: s.kept.holdBytes,
  });
  if (first === null) return false;
  const { m, boundBytes } = first;
  await updateOf(s, c);
  const limit = limitAgainst(s, null, m, ref); // its peak is not measured yet: the wider margin
  await s.kept.makeRoom([boundBytes]);
  const got = await timeThenFit({
    time: () =>
      timeTrainStep({
        ...stepAt(s, c, m),
        steps: s.steps,
        cannotWinAboveMs: limit.cannotWinAboveMs,
        margin: limit.margin,
      }),
    fit: () => fitOf(s, c, floor),
    fitsAt: (r) => r.batchSize === m,
  });
  const held =
    `timed before its fit (on the CPU this process can hold its step: at most ` +
    `${formatBytes(boundBytes)}, twice ${lighter.c.label}'s peak at ${floor} scaled to ${m})`;
  if (got.kind === 'cannot-win') {
    const note = `${stopNote(got.timing.times, limit)}; ${held}, so never fitted: it cannot win whether it fits or not`;
    record(s, c, rowOf(s, c, null, m, got.timing, true, note), true, null, null);
  } else if (got.kind === 'does-not-fit') {
    const sps = perSecondAt(s, m, got.timing.stepMs).toFixed(1);
    const note =
      `cannot win: ${m} does not fit (${lighter.c.label} fits up to ${floor} and does less work); ${held}: ` +
      `${sps} samples/s, not counted`;
    s.byCandidate.get(c)!.push(skippedRow(c, note));
  } else {
    s.fitted.set(c, { r: got.fit, floor });
    record(s, c, rowOf(s, c, got.fit, m, got.timing, false, held), false, null, fitPeak(got.fit, m));
  }
  return true;
};

/** One candidate's turn: skipped (and why), timed before its fit, or fitted and walked. */
const turnOf = async <T extends string, R extends MicroFit>(
  s: TrainState<T, R>,
  c: Candidate<T>,
  k: number,
): Promise<void> => {
  const G = s.G;
  const skipped = (note: string): void => void s.byCandidate.get(c)!.push(skippedRow(c, note));
  const lighters = lighterThan(s.candidates, c).filter((x) => s.fitted.has(x));
  const lighter = lighters.reduce<Lighter<T> | null>(
    (a, x) => (a === null || s.fitted.get(x)!.r.batchSize > a.max ? { c: x, max: s.fitted.get(x)!.r.batchSize } : a),
    null,
  );
  if (lighter !== null && lighter.max >= G)
    return skipped(`cannot win: ${lighter.c.label} fits every micro-batch up to ${G} and does less work`);
  const pastOf = () =>
    lighters.map((x) => pastItsBest(s.byCandidate.get(x)!, s.fitted.get(x)!.r.batchSize)).find((p) => p !== null);
  // Before it is decided on first timings, a tie that decides it is timed again (settleSlope).
  if (lighters.length > 0 && !pastOf()) await settleSlope(s, lighters);
  const past = pastOf();
  if (past) {
    const { top, below } = past;
    const retimedNote = s.retimedEarly.some(([a, b]) => a === keyOf(below) && b === keyOf(top))
      ? ', timed again side by side'
      : '';
    return skipped(
      `cannot win: ${top.label} is slower at ${top.microBatchSize} than at ${below.microBatchSize} (` +
        `${top.samplesPerSecond!.toFixed(1)} vs ${below.samplesPerSecond!.toFixed(1)} samples/s${retimedNote}` +
        `), ` +
        `so slower still above ${top.microBatchSize}, and this does more work at every micro-batch`,
    );
  }
  if (await timedBeforeFit(s, c, lighter)) return;
  const r = await fitOf(s, c, lighter?.max ?? 0);
  if (r === null)
    return skipped(
      lighter === null
        ? 'no micro-batch fits'
        : `cannot win: no micro-batch above ${lighter.max} fits (${lighter.c.label} fits up to ${lighter.max}` +
            ` and does less work)`,
    );
  const floor = lighter?.max ?? 0;
  s.fitted.set(c, { r, floor });
  // Its micro-batches from half its largest up while faster, else down (MicroWalk); the first
  // two as light as each other side by side where they take the same m.
  const mate = await mateOf(s, k);
  await walkAll(s, walkerOf(s, c, r, floor), mate);
  // the table: largest m first
  for (const x of [c, mate?.c]) if (x) s.byCandidate.get(x)!.sort((u, v) => v.microBatchSize! - u.microBatchSize!);
};

/**
 * Every candidate's turn, lightest first; the rows in candidate order, with what tune() needs to
 * settle a tie. The kept sessions are released by tune() once it has chosen (or here, on a failure).
 */
export async function searchTrain<T extends string, R extends MicroFit>(s: TrainState<T, R>): Promise<TuneSearch> {
  try {
    for (const [k, c] of s.candidates.entries()) {
      s.o.signal?.throwIfAborted();
      if (s.fitAhead.get(c)) continue; // walked beside the one before it
      await turnOf(s, c, k);
    }
  } catch (err) {
    await s.kept.releaseAll();
    throw err;
  }
  const rows = allRows(s); // the table in candidate order
  // A row stopped early lost by a margin and has no noise estimate: it does not compete. A tie the
  // lower peak would take from a faster row is timed again first, the two side by side (settle-tie).
  return {
    rows,
    excluded: excludedOf(s, rows),
    again: { retime: (a, b) => retime(s, a, b), maxPairs: MAX_RETIMES },
    retimed: s.retimedEarly.map(indicesIn(rows)),
    sideBySide: s.sideBySide.map(indicesIn(rows)),
    release: () => s.kept.releaseAll(),
  };
}
