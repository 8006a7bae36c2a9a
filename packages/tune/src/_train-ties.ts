// tuneTrain's ties: the warm sessions a tie's second timing would take, that second timing (the
// two alternately, on the kept sessions), and a tie timed again before a heavier candidate when it
// decides whether a lighter one is past its best.
import { formatBytes } from '@soup/batch-probe';
import {
  allRows,
  at,
  type Candidate,
  candidateOf,
  excludedOf,
  indicesIn,
  keyOf,
  type MicroFit,
  peakOf,
  stepOf,
  type TrainState,
} from './_train-state';
import { perMicroBatch } from './global-step';
import { holdable } from './kept-sessions';
import { type Retiming, rowsToKeep, tieOver, timeTieAgain } from './settle-tie';
import { timeAlternately } from './step-timing';
import type { TuneRow } from './tune-cache';

/**
 * Rounds of a tie's second timing (one step of each a round): five, so that each side's noise is
 * the standard error of three values (the fastest half of five, rounded up), as the first timing's
 * of six steps. With four (two values each) the noise was so rough that two rows 8–11 % apart side
 * by side still read as a tie (±20 ms on a 210 ms step), and the lower peak took it; a sixth round
 * adds no value to either fastest half.
 */
export const RETIME_ROUNDS = 5;
/** At most this many pairs timed again in one choice (before a heavier candidate and at the end, together). */
export const MAX_RETIMES = 2;

/** Keeps only the sessions of the rows a tie's second timing would take now (rowsToKeep). */
export const keepOnly = async <T extends string, R extends MicroFit>(
  s: TrainState<T, R>,
  rows: readonly TuneRow[],
): Promise<void> => {
  const toKeep = rowsToKeep(rows, s.G, excludedOf(s, rows), s.sideBySide.map(indicesIn(rows))).map((i) => rows[i]!);
  // A pair that cannot be held together is not timed side by side: keep the faster (the last) alone.
  const peaks = toKeep.map((r) => peakOf(s, r));
  await s.kept.keepOnly(new Set((holdable(peaks, s.kept.holdBytes) ? toKeep : toKeep.slice(-1)).map(keyOf)));
};

/**
 * A tie's second timing (timeAlternately, on the sessions kept warm where there are), with its dim
 * line; null, said, when the two sessions do not fit together.
 */
export const retime = async <T extends string, R extends MicroFit>(
  s: TrainState<T, R>,
  a: TuneRow,
  b: TuneRow,
): Promise<[Retiming, Retiming] | null> => {
  const t0 = performance.now();
  const peaks = [peakOf(s, a), peakOf(s, b)];
  if (!holdable(peaks, s.kept.holdBytes)) {
    const shown = peaks.map((p) => (p === null ? 'unknown' : formatBytes(p))).join(' + ');
    s.say({
      type: 'note',
      message:
        `${at(a)} and ${at(b)} are within the noise, the lower peak on the slower, but their two ` +
        `sessions do not fit together (${shown} over ${formatBytes(s.kept.holdBytes)}): not timed side by side, ` +
        `the faster stands`,
    });
    return null;
  }
  await s.kept.makeRoom(peaks, new Set([keyOf(a), keyOf(b)]));
  const [sa, sb] = [s.kept.get(keyOf(a)), s.kept.get(keyOf(b))];
  const raw = await timeAlternately(sa ?? stepOf(s, a), sb ?? stepOf(s, b), RETIME_ROUNDS);
  // as the rows show their steps: the optimizer step's time per micro-batch
  const t = [a, b].map((r, k) => perMicroBatch(s.G, r.microBatchSize!, raw[k]!, s.update ?? null)) as [
    Retiming,
    Retiming,
  ];
  const warm =
    sa && sb
      ? 'both sessions kept warm from their first timing'
      : sa || sb
        ? 'one session kept warm from its first timing'
        : 'two new sessions';
  s.say({
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
export const settleSlope = async <T extends string, R extends MicroFit>(
  s: TrainState<T, R>,
  lighters: readonly Candidate<T>[],
): Promise<void> => {
  const all = allRows(s);
  const pair = tieOver(all, s.G, excludedOf(s, all));
  if (pair === null || s.retimedEarly.length >= MAX_RETIMES) return;
  const [i, j] = pair;
  // Timed side by side from the start (the four opening timings): settled as it stands.
  if (s.sideBySide.some((p) => p.includes(keyOf(all[i]!)) && p.includes(keyOf(all[j]!)))) return;
  const x = lighters.find((l) => candidateOf(s.candidates, all[i]!) === l && candidateOf(s.candidates, all[j]!) === l);
  if (!x) return;
  const [top, below] = s.byCandidate
    .get(x)!
    .filter(
      (r) =>
        r.microBatchSize !== null && r.samplesPerSecond !== null && r.microBatchSize <= s.fitted.get(x)!.r.batchSize,
    )
    .sort((u, v) => v.microBatchSize! - u.microBatchSize!);
  if (top !== all[j] || below !== all[i]) return;
  const why = 'to decide whether a heavier choice can win';
  const now = await timeTieAgain(all, i, j, s.G, (a, b) => retime(s, a, b), why);
  if (now === null) return; // not timed side by side: decided on first timings, as before
  s.retimedEarly.push([keyOf(all[i]!), keyOf(all[j]!)]);
  let k = 0;
  for (const [cand, list] of s.byCandidate) {
    s.byCandidate.set(cand, now.slice(k, k + list.length));
    k += list.length;
  }
  // The faster row kept its figures, so the best so far is unchanged unless the other overtook it.
  if (s.best !== null && now[i]!.samplesPerSecond! > s.best.samplesPerSecond!) s.best = now[i]!;
  else if (s.best === all[j]) s.best = now[j]!;
};
