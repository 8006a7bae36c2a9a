// A tie that the lower peak would win, settled by measurement first. Each row of a tune table was
// timed once, at its own moment: on a shared machine a neighbour can slow one timing by 10–15 %
// and make a faster configuration look tied with a slower one (in CI: selective at 8 won a
// tie by its lower peak against no checkpointing at 8, which was 10 % faster when the two were
// timed again side by side). So before the lower peak takes a tie from the fastest, the two are
// timed again against each other, alternately (the same load on both). What that shows is their
// ratio: the slower-looking row is shown at the faster one's level times that ratio, with the noise
// of the side-by-side timing, and the choice is made again: the faster wins unless the two are
// still within the noise.
import { chooseConfiguration, type ConfigurationChoice } from './choose-configuration';
import type { TuneRow } from './tune-cache';

/** A row's step timed again: its mean and standard error in ms. */
export interface Retiming {
  stepMs: number;
  noiseMs: number;
}

/**
 * Times two rows again side by side; null when it cannot: the two sessions do not fit the device
 * together (kept-sessions), and the caller has said why.
 */
export type Retime = (a: TuneRow, b: TuneRow) => Promise<[Retiming, Retiming] | null>;

const named = (r: TuneRow): string =>
  r.microBatchSize === null ? r.label : `${r.label} at micro-batch ${r.microBatchSize}`;

/** The pair a choice would settle by the lower peak against the faster row (chosen, fastest), or null. */
export function tieTakenByPeak(choice: ConfigurationChoice): [number, number] | null {
  if (choice.chosen === null || choice.closeTo === null) return null;
  const sps = (i: number): number => choice.speeds[i]!.samplesPerSecond!;
  return sps(choice.chosen) < sps(choice.closeTo) ? [choice.chosen, choice.closeTo] : null;
}

/** chooseConfiguration over `rows`, a row whose index is in `excluded` not competing (stopped early). */
export const choiceOver = (rows: readonly TuneRow[], G: number, excluded: ReadonlySet<number>): ConfigurationChoice =>
  chooseConfiguration(
    rows.map((r, i) => ({ ...r, stepMs: excluded.has(i) ? null : r.stepMs, label: named(r) })),
    G,
  );

/**
 * The rows a tie's second timing would take if the search ended now (indices into `rows`): the pair
 * that tieTakenByPeak names, else the chosen row alone (the fastest: it is in every such pair while
 * it stays the fastest, and the lower peak of one if a faster row comes); none when no row is
 * timed. A pair in `settled` (timed side by side from the start: chooseSettled's `sideBySide`) is
 * not timed again, so only its chosen row is kept, for a faster row that may come. A tuner keeps
 * these rows' warm sessions, so that a second timing needs no new session and no warm-up.
 */
export function rowsToKeep(
  rows: readonly TuneRow[],
  globalBatchSize: number,
  excluded: ReadonlySet<number>,
  settled: readonly [number, number][] = [],
): number[] {
  const choice = choiceOver(rows, globalBatchSize, excluded);
  if (choice.chosen === null) return [];
  const pair = tieTakenByPeak(choice);
  return pair && !among(settled, pair[0], pair[1]) ? pair : [choice.chosen];
}

/** Whether the pair (i, j), in either order, is one of `pairs`. */
const among = (pairs: readonly [number, number][], i: number, j: number): boolean =>
  pairs.some(([x, y]) => (x === i && y === j) || (x === j && y === i));

/** The tie a choice over `rows` would give the lower peak from a faster row: (lower peak, faster), or null. */
export const tieOver = (
  rows: readonly TuneRow[],
  globalBatchSize: number,
  excluded: ReadonlySet<number>,
): [number, number] | null => tieTakenByPeak(choiceOver(rows, globalBatchSize, excluded));

/**
 * `rows` with the tie (i, the lower peak, against j, the faster) timed again by `retime`, the two
 * side by side. What that shows is their ratio, under one load. The level stays j's own first
 * timing, the one the other rows were compared with (a timing taken now under another load would
 * not compare with them): i becomes j's samples/s times the ratio (and the m ratio), both take the
 * side-by-side noise and keep their first timing (`firstTiming`), and their notes say so, with
 * `why` when given. Null when `retime` could not time them (nothing changed).
 */
export async function timeTieAgain(
  rows: readonly TuneRow[],
  i: number,
  j: number,
  G: number,
  retime: Retime,
  why?: string,
): Promise<TuneRow[] | null> {
  const out = [...rows];
  const a = rows[i]!;
  const b = rows[j]!;
  const again = await retime(a, b);
  if (again === null) return null;
  const [ri, rj] = again;
  const ratio = rj.stepMs / ri.stepMs; // i's speed over j's at the same m; times the m ratio below
  const spsI = b.samplesPerSecond! * ratio * (b.accumulation! / a.accumulation!);
  const stepI = G / ((a.accumulation! * spsI) / 1000);
  const pct = (spsI / b.samplesPerSecond! - 1) * 100;
  const first = (r: TuneRow): TuneRow['firstTiming'] =>
    r.firstTiming ?? { stepMs: r.stepMs!, noiseMs: r.noiseMs, samplesPerSecond: r.samplesPerSecond!, note: r.note };
  const because = why ? `, ${why}` : '';
  out[i] = {
    ...a,
    firstTiming: first(a),
    stepMs: stepI,
    noiseMs: (stepI * ri.noiseMs) / ri.stepMs,
    samplesPerSecond: spsI,
    note:
      `timed again, alternately with ${named(b)}${because}: ${pct >= 0 ? '+' : ''}${pct.toFixed(1)}` +
      ` % against it, shown at its level (first timing: ${a.samplesPerSecond!.toFixed(1)} samples/s)`,
  };
  out[j] = {
    ...b,
    firstTiming: first(b),
    noiseMs: (b.stepMs! * rj.noiseMs) / rj.stepMs,
    note: `timed again, alternately with ${named(a)}${because}; its first timing kept as the level`,
  };
  return out;
}

/**
 * The choice over `rows` (rows whose index is in `excluded` do not compete: stopped early), with
 * each tie that the lower peak would take from a faster row first timed again by `retime` (both
 * rows, against each other): the faster row keeps its figures, the other becomes the faster's
 * samples/s times their side-by-side ratio, and both take the side-by-side noise. Each pair once, at most
 * `maxRetimes` pairs: a tie that stands after its second timing goes to the lower peak, and the
 * reason says that it was timed twice; one beyond the limit, or one that cannot be timed side by
 * side (`retime` gives null), goes to the faster row. So the lower peak never takes a tie from a
 * faster row on first timings alone.
 */
export async function chooseSettled(o: {
  rows: readonly TuneRow[];
  globalBatchSize: number;
  excluded: ReadonlySet<number>;
  /** Null from it: that pair cannot be timed side by side (they do not fit together), so the faster stands. */
  retime: Retime;
  /** @default 2 */
  maxRetimes?: number;
  /** Pairs (indices into `rows`) already timed again by timeTieAgain: not timed again, and counted in `maxRetimes`. */
  retimed?: readonly [number, number][];
  /**
   * Pairs (indices into `rows`) whose first timings were taken side by side, under one load: a tie
   * between them stands as it is, not timed again and not counted in `maxRetimes`, and the reason
   * says how it was timed.
   */
  sideBySide?: readonly [number, number][];
}): Promise<{ choice: ConfigurationChoice; rows: TuneRow[]; retimed: [number, number][] }> {
  const G = o.globalBatchSize;
  const rows = [...o.rows];
  const choose = (): ConfigurationChoice => choiceOver(rows, G, o.excluded);
  const retimed: [number, number][] = [...(o.retimed ?? [])];
  const max = o.maxRetimes ?? 2;
  let choice = choose();
  let unsettled: string | null = null;
  const sideBySide = o.sideBySide ?? [];
  for (let pair = tieTakenByPeak(choice); pair !== null; pair = tieTakenByPeak(choice)) {
    const [i, j] = pair;
    if (among(retimed, i, j) || among(sideBySide, i, j)) break; // it stands after a timing side by side
    if (retimed.length >= max) {
      // Not checked side by side: the lower peak does not take it from the measured fastest.
      unsettled =
        `${named(rows[j]!)} is the fastest (${rows[j]!.samplesPerSecond!.toFixed(1)} samples/s); ` +
        `${named(rows[i]!)} is within the noise with a lower peak, but that tie was not timed again (a choice ` +
        `times at most ${max} pairs again), so the faster stands`;
      choice = { ...choice, chosen: j, closeTo: i };
      break;
    }
    const again = await timeTieAgain(rows, i, j, G, o.retime);
    if (again === null) {
      unsettled =
        `${named(rows[j]!)} is the fastest (${rows[j]!.samplesPerSecond!.toFixed(1)} samples/s); ` +
        `${named(rows[i]!)} is within the noise with a lower peak, but the two cannot be timed side by side (their ` +
        `sessions do not fit the device together), so the faster stands`;
      choice = { ...choice, chosen: j, closeTo: i };
      break;
    }
    rows.splice(0, rows.length, ...again);
    retimed.push([i, j]);
    choice = choose();
  }
  // A tie decided on first timings taken side by side says so.
  const tie =
    choice.chosen !== null &&
    choice.closeTo !== null &&
    among(sideBySide, choice.chosen, choice.closeTo) &&
    !among(retimed, choice.chosen, choice.closeTo);
  if (tie && unsettled === null)
    choice = {
      ...choice,
      reason: `${choice.reason}; the two were timed side by side from the start, alternately (the same load on both)`,
    };
  if (retimed.length === 0 && unsettled === null) return { choice, rows, retimed };
  const pairs = retimed.map(([i, j]) => `${named(rows[i]!)} and ${named(rows[j]!)}`).join('; then ');
  const settled =
    retimed.length === 0
      ? ''
      : `${pairs} were within the noise of their first timings, with the lower peak on the slower, so they were ` +
        `timed again against each other, alternately (the same load on both), and their ratio decided`;
  const reason = [unsettled ?? choice.reason, settled].filter((x) => x !== '').join('. ');
  return { choice: { ...choice, reason }, rows, retimed };
}
