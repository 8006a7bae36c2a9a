// tuneTrain's walk over a candidate's micro-batches (MicroWalk), alone or beside a second one:
// each step timed alone, or side by side with the others under one load.
import {
  allRows,
  type Candidate,
  fitPeak,
  keyOf,
  limitAgainst,
  type MicroFit,
  record,
  rowOf,
  stepAt,
  stopNote,
  type TrainState,
  perSecondAt,
  updateOf,
} from './_train-state';
import { keepOnly } from './_train-ties';
import { holdable, peakAtMost } from './kept-sessions';
import { MicroWalk } from './micro-walk';
import { fastestHalf, type LimitOf, timeSideBySide, timeTrainStep, type WinLimit } from './step-timing';
import type { TuneRow } from './tune-cache';

/** A candidate walking its micro-batches. */
export type Walker<T extends string, R extends MicroFit> = { c: Candidate<T>; r: R; walk: MicroWalk };
/** One point of a side-by-side timing: a walker's candidate at micro-batch m. */
type Point<T extends string, R extends MicroFit> = { w: Walker<T, R>; m: number };

/** c's walk over the divisors of G that r fits, above `floor`. */
export const walkerOf = <T extends string, R extends MicroFit>(
  s: TrainState<T, R>,
  c: Candidate<T>,
  r: R,
  floor: number,
): Walker<T, R> => ({
  c,
  r,
  walk: MicroWalk.over(s.divisors.filter((d) => d <= r.batchSize && d > floor).sort((x, y) => x - y)),
});

/** limitAgainst the best so far, with the peak r's fit measured at m; undefined before anything is timed. */
const limitAt = (s: TrainState<string, MicroFit>, r: MicroFit, m: number): WinLimit | undefined =>
  s.best === null ? undefined : limitAgainst(s, fitPeak(r, m), m, s.best);

/** c's step at m timed alone. */
export const timeAt = async <T extends string, R extends MicroFit>(
  s: TrainState<T, R>,
  c: Candidate<T>,
  r: R,
  m: number,
): Promise<TuneRow> => {
  await updateOf(s, c);
  const limit = limitAt(s, r, m);
  const peak = peakAtMost(r.trials, m);
  await s.kept.makeRoom([peak]);
  const t = await timeTrainStep({
    ...stepAt(s, c, m),
    steps: s.steps,
    ...(limit ? { cannotWinAboveMs: limit.cannotWinAboveMs, margin: limit.margin } : {}),
    keepOpen: true,
  });
  const row = rowOf(s, c, r, m, t, t.stoppedEarly, t.stoppedEarly ? stopNote(t.times, limit!) : null);
  record(s, c, row, t.stoppedEarly, t.open, peak);
  await keepOnly(s, allRows(s));
  return row;
};

/**
 * When point j of a side-by-side timing may stop: against the best so far or, under the
 * same load, against the fastest of the other points still running with three steps or more (the
 * mean of its fastest half so far), whichever is faster; by 5 % when j's peak is above that one's,
 * else by 10 % (limitAgainst).
 */
const limitsIn =
  <T extends string, R extends MicroFit>(s: TrainState<T, R>, points: readonly Point<T, R>[]): LimitOf =>
  (j, times, stopped) => {
    let ref: Pick<TuneRow, 'samplesPerSecond' | 'peakBytes'> | null = s.best;
    for (const [k, q] of points.entries()) {
      if (k === j || stopped[k] || times[k]!.length < 3) continue;
      const sps = perSecondAt(s, q.m, fastestHalf(times[k]!).stepMs);
      if (ref === null || sps > ref.samplesPerSecond!) ref = { samplesPerSecond: sps, peakBytes: fitPeak(q.w.r, q.m) };
    }
    const p = points[j]!;
    return ref === null ? undefined : limitAgainst(s, fitPeak(p.w.r, p.m), p.m, ref);
  };

/**
 * Points timed side by side (timeSideBySide: as many steps each as alone, in turn, each with its
 * own early stop, against the best so far and the others under the same load). Every two of them
 * that both ran to the end are settled as a tie by this timing (sideBySide).
 */
const timeGroup = async <T extends string, R extends MicroFit>(
  s: TrainState<T, R>,
  points: readonly Point<T, R>[],
): Promise<TuneRow[]> => {
  await updateOf(s, points[0]!.w.c);
  const peaks = points.map((p) => peakAtMost(p.w.r.trials, p.m));
  await s.kept.makeRoom(peaks);
  const sides = await timeSideBySide(
    points.map((p) => stepAt(s, p.w.c, p.m)),
    s.steps,
    limitsIn(s, points),
  );
  const rows = points.map((p, j) => {
    const t = sides[j]!;
    const others = points.filter((_, k) => k !== j);
    const with_ = others.every((q) => q.m === p.m)
      ? `${others.map((q) => q.w.c.label).join(', ')} at ${p.m}`
      : others.map((q) => `${q.w.c.label} at ${q.m}`).join(', ');
    const note = t.stoppedBy ? stopNote(t.times, t.stoppedBy) : `timed side by side with ${with_}, alternately`;
    return rowOf(s, p.w.c, p.w.r, p.m, t, t.stoppedEarly, note);
  });
  for (const [j, p] of points.entries())
    record(s, p.w.c, rows[j]!, sides[j]!.stoppedEarly, sides[j]!.open, peaks[j] ?? null);
  for (let j = 0; j < rows.length; j++)
    for (let k = j + 1; k < rows.length; k++)
      if (!sides[j]!.stoppedEarly && !sides[k]!.stoppedEarly) s.sideBySide.push([keyOf(rows[j]!), keyOf(rows[k]!)]);
  await keepOnly(s, allRows(s));
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
export const walkAll = async <T extends string, R extends MicroFit>(
  s: TrainState<T, R>,
  a: Walker<T, R>,
  b: Walker<T, R> | null,
): Promise<void> => {
  const opening = a.walk.opening();
  if (b !== null && opening.length === 2 && b.walk.opening().join() === opening.join()) {
    const points = opening.flatMap((m) => [a, b].map((w) => ({ w, m })));
    if (
      holdable(
        points.map((p) => peakAtMost(p.w.r.trials, p.m)),
        s.kept.holdBytes,
      )
    ) {
      const rows = await timeGroup(s, points);
      for (const [j, p] of points.entries()) p.w.walk.took(rows[j]!.samplesPerSecond!);
    }
  }
  for (;;) {
    s.o.signal?.throwIfAborted();
    const ma = a.walk.next();
    const mb = b === null ? null : b.walk.next();
    if (ma === null && mb === null) return;
    if (
      b !== null &&
      ma !== null &&
      ma === mb &&
      holdable([peakAtMost(a.r.trials, ma), peakAtMost(b.r.trials, ma)], s.kept.holdBytes)
    ) {
      const [ra, rb] = await timeGroup(s, [
        { w: a, m: ma },
        { w: b, m: ma },
      ]);
      a.walk.took(ra!.samplesPerSecond!);
      b.walk.took(rb!.samplesPerSecond!);
    } else if (ma !== null) a.walk.took((await timeAt(s, a.c, a.r, ma)).samplesPerSecond!);
    else b!.walk.took((await timeAt(s, b!.c, b!.r, mb!)).samplesPerSecond!);
  }
};
