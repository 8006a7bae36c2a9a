// chooseSettled: a tie that the lower peak would take from a faster row is timed again, the two
// against each other, before it is decided. The retimings here are given (what a side-by-side
// timing would report); the timing itself is timeAlternately's, run for real by train-tune.test.
import type { TuneRow } from './tune-cache';
import { describe, expect, it } from 'vitest';
import { chooseSettled, rowsToKeep, tieOver, timeTieAgain, type Retiming } from './settle-tie';

const G = 32;
const MiB = 1024 * 1024;
const row = (tier: string, m: number, peakMiB: number, stepMs: number, noiseMs: number): TuneRow => ({
  label: `gradient_checkpointing=${tier}`,
  values: { gradient_checkpointing: tier },
  microBatchSize: m,
  accumulation: G / m,
  peakBytes: peakMiB * MiB,
  stepMs,
  noiseMs,
  samplesPerSecond: G / (((G / m) * stepMs) / 1000),
  note: null,
});

/** A retime that answers from a table keyed by row label and m, and records what it was asked. */
function retimer(answers: Record<string, Retiming>) {
  const calls: string[][] = [];
  const key = (r: TuneRow): string => `${r.values.gradient_checkpointing}@${r.microBatchSize}`;
  return {
    calls,
    retime: async (a: TuneRow, b: TuneRow): Promise<[Retiming, Retiming] | null> => {
      calls.push([key(a), key(b)]);
      if (!(key(a) in answers) && !(key(b) in answers)) return null; // cannot be timed side by side
      return [answers[key(a)]!, answers[key(b)]!];
    },
  };
}

describe('chooseSettled', () => {
  // The first timings: off at 8 is 1 % faster than selective at 8, inside the noise, and selective's
  // peak is lower, so the lower peak would take it.
  const first = (): TuneRow[] => [row('false', 8, 171, 196, 2), row('selective', 8, 159, 198, 2)];

  it('times the tie again and gives it to the faster row when the second timing separates them', async () => {
    const r = retimer({ 'false@8': { stepMs: 180, noiseMs: 1.5 }, 'selective@8': { stepMs: 199, noiseMs: 1.5 } });
    const s = await chooseSettled({ rows: first(), globalBatchSize: G, excluded: new Set(), retime: r.retime });
    expect(r.calls).toEqual([['selective@8', 'false@8']]);
    expect(s.choice.chosen).toBe(0);
    // The faster keeps its level (196 ms); the other is that level times their side-by-side ratio.
    expect(s.rows[0]!.stepMs).toBe(196);
    expect(s.rows[0]!.noiseMs).toBeCloseTo((196 * 1.5) / 180, 9);
    expect(s.rows[1]!.samplesPerSecond).toBeCloseTo(((32 / ((4 * 196) / 1000)) * 180) / 199, 9);
    expect(s.rows[1]!.stepMs).toBeCloseTo((196 * 199) / 180, 9);
    // Each keeps its first timing (what the search decided on before the tie was timed again).
    expect(s.rows[0]!.firstTiming).toEqual({
      stepMs: 196,
      noiseMs: 2,
      samplesPerSecond: 32 / ((4 * 196) / 1000),
      note: null,
    });
    expect(s.rows[1]!.firstTiming).toEqual({
      stepMs: 198,
      noiseMs: 2,
      samplesPerSecond: 32 / ((4 * 198) / 1000),
      note: null,
    });
    expect(s.rows[0]!.note).toBe(
      'timed again, alternately with gradient_checkpointing=selective at micro-batch 8; its first timing kept as ' +
        'the level',
    );
    expect(s.rows[1]!.note).toBe(
      'timed again, alternately with gradient_checkpointing=false at micro-batch 8: -9.5 % against it, shown at ' +
        'its level (first timing: 40.4 samples/s)',
    );
    expect(s.choice.reason).toMatch(
      /^gradient_checkpointing=false at micro-batch 8 is the fastest: 40\.8 samples\/s, 1\.11× /,
    );
    expect(s.choice.reason).toMatch(
      /timed again against each other, alternately \(the same load on both\), and their ratio decided$/,
    );
    expect(s.retimed).toEqual([[1, 0]]);
  });

  it('gives a tie that stands after the second timing to the lower peak, and says it was timed twice', async () => {
    const r = retimer({ 'false@8': { stepMs: 190, noiseMs: 2 }, 'selective@8': { stepMs: 191, noiseMs: 2 } });
    const s = await chooseSettled({ rows: first(), globalBatchSize: G, excluded: new Set(), retime: r.retime });
    expect(r.calls).toHaveLength(1);
    expect(s.choice.chosen).toBe(1);
    expect(s.choice.reason).toMatch(
      /its peak is lower: the lower peak wins a tie\. gradient_checkpointing=selective at micro-batch 8 and gradient_checkpointing=false at micro-batch 8 were within the noise/,
    );
  });

  it('times nothing again when the fastest is clear, or when the fastest also has the lower peak', async () => {
    for (const rows of [
      [row('false', 8, 171, 170, 2), row('selective', 8, 159, 198, 2)], // off is 16 % faster
      [row('false', 8, 150, 196, 2), row('selective', 8, 159, 198, 2)], // tied, and off's peak is lower too
    ]) {
      const r = retimer({});
      const s = await chooseSettled({ rows, globalBatchSize: G, excluded: new Set(), retime: r.retime });
      expect(r.calls).toEqual([]);
      expect(s.choice.chosen).toBe(0);
      expect(s.rows).toEqual(rows);
      expect(s.choice.reason).not.toMatch(/timed again/);
    }
  });

  it('leaves a row stopped early out of the choice and out of any second timing', async () => {
    // selective at 4 looks tied on its three steps with the lowest peak, but it was stopped early.
    const rows = [row('false', 8, 171, 170, 2), row('selective', 4, 90, 86, 0)];
    const r = retimer({});
    const s = await chooseSettled({ rows, globalBatchSize: G, excluded: new Set([1]), retime: r.retime });
    expect(r.calls).toEqual([]);
    expect(s.choice.chosen).toBe(0);
  });

  // off@16 looks fastest; off@8 and selective@8 are within its noise, selective's peak the lowest.
  // Side by side, selective@8 is 9 % slower than off@16; then off@8 (lower peak than off@16) is the
  // tie the lower peak would take.
  const three = (): TuneRow[] => [row('false', 16, 255, 390, 3), ...first()];
  const answers = {
    'false@16': { stepMs: 391, noiseMs: 3 },
    'false@8': { stepMs: 200, noiseMs: 2 },
    'selective@8': { stepMs: 215, noiseMs: 2 },
  };

  it('settles a second tie that the first second timing uncovers, and never times a pair twice', async () => {
    const r = retimer(answers);
    const s = await chooseSettled({ rows: three(), globalBatchSize: G, excluded: new Set(), retime: r.retime });
    expect(r.calls).toEqual([
      ['selective@8', 'false@16'],
      ['false@8', 'false@16'],
    ]);
    expect(s.choice.chosen).toBe(1); // off@8: still within the noise of off@16 side by side, and its peak is lower
    expect(s.rows[1]!.samplesPerSecond).toBeCloseTo(((32 / ((2 * 390) / 1000)) * 391 * 2) / (200 * 4), 9);
    expect(s.choice.reason).toMatch(
      /; then gradient_checkpointing=false at micro-batch 8 and gradient_checkpointing=false at micro-batch 16 were within the noise/,
    );
  });

  it('beyond maxRetimes, the faster row keeps a tie that was not timed again', async () => {
    const r = retimer(answers);
    const s = await chooseSettled({
      rows: three(),
      globalBatchSize: G,
      excluded: new Set(),
      retime: r.retime,
      maxRetimes: 1,
    });
    expect(r.calls).toEqual([['selective@8', 'false@16']]);
    expect(s.choice.chosen).toBe(0);
    expect(s.choice.reason).toMatch(
      /^gradient_checkpointing=false at micro-batch 16 is the fastest \(41\.0 samples\/s\); gradient_checkpointing=false at micro-batch 8 is within the noise with a lower peak, but that tie was not timed again \(a choice times at most 1 pairs again\), so the faster stands\. gradient_checkpointing=selective at micro-batch 8 and/,
    );
  });

  it(
    'gives a tie whose first timings were taken side by side to the lower peak as it stands: not ' +
      'timed again, and says so',
    async () => {
      const r = retimer({ 'false@8': { stepMs: 180, noiseMs: 1.5 }, 'selective@8': { stepMs: 199, noiseMs: 1.5 } });
      const s = await chooseSettled({
        rows: first(),
        globalBatchSize: G,
        excluded: new Set(),
        retime: r.retime,
        sideBySide: [[0, 1]],
      });
      expect(r.calls).toEqual([]);
      expect(s.choice.chosen).toBe(1);
      expect(s.rows).toEqual(first());
      expect(s.retimed).toEqual([]);
      expect(s.choice.reason).toMatch(
        /its peak is lower: the lower peak wins a tie; the two were timed side by side from the start, alternately \(the same load on both\)$/,
      );
    },
  );

  it(
    'does not count a pair timed side by side from the start against maxRetimes, and times a tie ' + 'outside it again',
    async () => {
      // off@8 and selective@8 side by side from the start; off@16 is faster than both, within the noise.
      const r = retimer(answers);
      const s = await chooseSettled({
        rows: three(),
        globalBatchSize: G,
        excluded: new Set(),
        retime: r.retime,
        maxRetimes: 1,
        sideBySide: [[1, 2]],
      });
      expect(r.calls).toEqual([['selective@8', 'false@16']]);
      expect(s.retimed).toEqual([[2, 0]]);
      expect(s.choice.reason).not.toMatch(/timed side by side from the start/);
    },
  );
});

describe('rowsToKeep', () => {
  it('names the pair a tie would be timed again with: the faster row and the lower peak within its noise', () => {
    // off at 8 (196 ms ±2) and selective at 8 (198 ms ±2, lower peak): a tie the lower peak would take.
    const rows = [row('false', 16, 300, 420, 2), row('false', 8, 171, 196, 2), row('selective', 8, 159, 198, 2)];
    expect(rowsToKeep(rows, G, new Set())).toEqual([2, 1]);
  });

  it('names the fastest alone when no tie would be timed again: it is clear, or it has the lower peak', () => {
    expect(rowsToKeep([row('false', 8, 171, 170, 1), row('selective', 8, 159, 198, 1)], G, new Set())).toEqual([0]);
    expect(rowsToKeep([row('false', 8, 171, 198, 2), row('selective', 8, 159, 196, 2)], G, new Set())).toEqual([1]);
  });

  it('names only the chosen row of a tie settled side by side from the start: that pair is not timed again', () => {
    const rows = [row('false', 16, 300, 420, 2), row('false', 8, 171, 196, 2), row('selective', 8, 159, 198, 2)];
    expect(rowsToKeep(rows, G, new Set(), [[1, 2]])).toEqual([2]);
    // another pair settled: this tie still would be timed again
    expect(rowsToKeep(rows, G, new Set(), [[0, 2]])).toEqual([2, 1]);
  });

  it('does not name a row stopped early, and names none when no row was timed', () => {
    const rows = [row('false', 8, 171, 196, 2), row('selective', 8, 159, 198, 2)];
    expect(rowsToKeep(rows, G, new Set([1]))).toEqual([0]);
    expect(rowsToKeep(rows, G, new Set([0, 1]))).toEqual([]);
    expect(rowsToKeep([], G, new Set())).toEqual([]);
  });
});

describe('a tie timed again before the end (timeTieAgain, then chooseSettled with it)', () => {
  // Selective at 16 looks 2 % faster than at 8 on first timings, inside the noise: not past its best
  // on those figures. Side by side, 8 is 5 % faster.
  const first = (): TuneRow[] => [row('selective', 16, 202, 392, 6), row('selective', 8, 122, 200, 3)];

  it('takes the second timing into the rows, with the reason in both notes', async () => {
    const rows = first();
    expect(tieOver(rows, G, new Set())).toEqual([1, 0]);
    const r = retimer({ 'selective@16': { stepMs: 400, noiseMs: 1 }, 'selective@8': { stepMs: 190, noiseMs: 1 } });
    const now = (await timeTieAgain(rows, 1, 0, G, r.retime, 'to decide whether a heavier choice can win'))!;
    expect(r.calls).toEqual([['selective@8', 'selective@16']]);
    expect(rows[1]!.firstTiming).toBeUndefined(); // the given rows are not changed
    expect(now[1]!.firstTiming?.note).toBeNull();
    expect(now[0]!.stepMs).toBe(392); // the faster on first timings keeps its level
    expect(now[1]!.samplesPerSecond).toBeCloseTo(now[0]!.samplesPerSecond! * (400 / (2 * 190)), 9);
    expect(now[1]!.note).toBe(
      'timed again, alternately with gradient_checkpointing=selective at micro-batch 16, to decide whether a ' +
        'heavier choice can win: +5.3 % against it, shown at its level (first timing: 40.0 samples/s)',
    );
    expect(now[0]!.note).toBe(
      'timed again, alternately with gradient_checkpointing=selective at micro-batch 8, to decide whether a ' +
        'heavier choice can win; its first timing kept as the level',
    );
  });

  it('is not timed a second time at the end, counts towards the limit, and is named in the reason', async () => {
    const r = retimer({ 'selective@16': { stepMs: 400, noiseMs: 6 }, 'selective@8': { stepMs: 203, noiseMs: 6 } });
    // Still a tie after the early second timing: it stands, and the lower peak takes it without a third timing.
    const now = (await timeTieAgain(first(), 1, 0, G, r.retime))!;
    expect(tieOver(now, G, new Set())).toEqual([1, 0]);
    const s = await chooseSettled({
      rows: now,
      globalBatchSize: G,
      excluded: new Set(),
      retime: r.retime,
      retimed: [[1, 0]],
    });
    expect(r.calls).toHaveLength(1);
    expect(s.choice.chosen).toBe(1);
    expect(s.retimed).toEqual([[1, 0]]);
    expect(s.choice.reason).toMatch(
      /gradient_checkpointing=selective at micro-batch 8 and gradient_checkpointing=selective at micro-batch 16 were within the noise of their first timings/,
    );
    // With the limit already reached by it, a new tie (off at 8, lower peak still) goes to the faster, untimed.
    const more = [...now, row('false', 4, 100, 103, 5)];
    const t = await chooseSettled({
      rows: more,
      globalBatchSize: G,
      excluded: new Set(),
      retime: r.retime,
      retimed: [[1, 0]],
      maxRetimes: 1,
    });
    expect(r.calls).toHaveLength(1);
    expect(t.choice.reason).toMatch(
      /but that tie was not timed again \(a choice times at most 1 pairs again\), so the faster stands/,
    );
  });
});

describe('a tie that cannot be timed side by side (its two sessions do not fit the device together)', () => {
  const first = (): TuneRow[] => [row('false', 8, 171, 196, 2), row('selective', 8, 159, 198, 2)];

  it('goes to the faster row, rows unchanged, and the reason says why', async () => {
    const r = retimer({}); // the retime answers null: the tuner said the pair does not fit together
    const s = await chooseSettled({ rows: first(), globalBatchSize: G, excluded: new Set(), retime: r.retime });
    expect(r.calls).toEqual([['selective@8', 'false@8']]);
    expect(s.choice.chosen).toBe(0);
    expect(s.rows).toEqual(first());
    expect(s.retimed).toEqual([]);
    expect(s.choice.reason).toBe(
      'gradient_checkpointing=false at micro-batch 8 is the fastest (40.8 samples/s); ' +
        'gradient_checkpointing=selective at micro-batch 8 is within the noise with a lower peak, but the two ' +
        'cannot be timed side by side (their sessions do not fit the device together), so the faster stands',
    );
  });

  it('timeTieAgain gives null and changes nothing', async () => {
    const rows = first();
    expect(await timeTieAgain(rows, 1, 0, G, retimer({}).retime)).toBeNull();
    expect(rows).toEqual(first());
  });
});

describe('timeTieAgain keeps the first note', () => {
  it("a row timed again keeps its first timing's note beside its figures", async () => {
    const rows = [
      row('selective', 16, 202, 392, 6),
      { ...row('selective', 8, 122, 200, 3), note: 'timed side by side' },
    ];
    const r = retimer({ 'selective@16': { stepMs: 400, noiseMs: 1 }, 'selective@8': { stepMs: 190, noiseMs: 1 } });
    const now = (await timeTieAgain(rows, 1, 0, G, r.retime))!;
    expect(now[1]!.note).toMatch(/^timed again, alternately with /);
    expect(now[1]!.firstTiming?.note).toBe('timed side by side');
  });
});
