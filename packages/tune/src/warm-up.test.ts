// A trainer's warm-up cancelled by the slope of its later runs, on fixed runs: start-up + steps ×
// step time, a warm-up of slow steps where one is given, and a few ms of noise per run.
import { describe, expect, it } from 'vitest';
import { clockOf, type TimedRun } from './output-clock';
import { noteWithWarmUp, rowSteps } from './warm-up';

const K = 8;
const STEPS = [1, 1 + K, 1 + 2 * K];
const FOUR = [1, 1 + K, 1 + 2 * K, 1 + 3 * K];
const NOTE = 'warm-up cancelled: the slope of the runs of 9, 17 and 25 steps';

/**
 * A row's runs at 20 ms a step: the wall time 1000 ms of start-up + the steps + `warmMs` in every
 * run past the warm-up (its slow steps 2 to 5; the first is slow in every run) + `wallNoise[i]`;
 * the output's span the same without the start-up, + `spanNoise[i]`.
 */
function rowOf(warmMs: number, wallNoise: number[], spanNoise = [0, 0, 0], steps = STEPS): Map<number, TimedRun> {
  return new Map(
    steps.map((s, i) => {
      const work = s * 20 + (s >= 5 ? warmMs : 0);
      return [s, { wallMs: 1000 + work + wallNoise[i]!, spanMs: work + spanNoise[i]! }];
    }),
  );
}

describe('rowSteps: a warm-up cancelled by the slope of the later runs', () => {
  it('holds a bend of three runs beyond the noise pending, and cancels it once a fourth run is on its line', () => {
    const three = new Map([
      ['plain', rowOf(0, [0, 4, 0])],
      ['warm', rowOf(600, [0, -3, 2])],
    ]);
    const r3 = rowSteps(three, 'wall');
    // Three runs cannot tell a warm-up from a slow middle run: the 3-point slope stands, the row pending.
    expect([...r3.pending]).toEqual(['warm']);
    expect(r3.rows.get('warm')!.warmUp).toBeNull();
    expect(r3.rows.get('warm')!.stepMs).toBeCloseTo((1000 + 340 + 600 + 2 - 1020) / 16, 9);
    const four = new Map([
      ['plain', rowOf(0, [0, 4, 0])],
      ['warm', rowOf(600, [0, -3, 2, 1], [0, 0, 0, 0], FOUR)],
    ]);
    const r = rowSteps(four, 'wall');
    const warm = r.rows.get('warm')!;
    expect(warm.warmUp).toBe(NOTE);
    expect(r.pending.size).toBe(0);
    // The later runs' line through 9, 17 and 25 steps: (−8 × (−3) + 8 × 1) / 128 off 20 ms.
    expect(warm.stepMs).toBeCloseTo(20 + (8 * -(-3) + 8 * 1) / 128 + 0, 9);
    expect(r.rows.get('plain')!.warmUp).toBeNull();
    expect(r.rows.get('plain')!.stepMs).toBeCloseTo(20, 9);
  });

  it('never cancels a slow middle run on one row: its fourth run is off the later line (a false winner)', () => {
    // The warm-up's bend and a 700 ms stall in the run of 9 steps look the same in three runs; the later slope of
    // the stalled row would be 20 − 700 / 8 = −67.5 ms a step. With the fourth run the later runs are not on a line.
    const runs = new Map([
      ['plain', rowOf(0, [0, 4, 0])],
      ['stalled', rowOf(0, [0, 700, 0, 0], [0, 0, 0, 0], FOUR)],
    ]);
    const r = rowSteps(runs, 'wall');
    expect(r.rows.get('stalled')!.warmUp).toBeNull();
    expect(r.pending.size).toBe(0);
    // Timed by its other runs (1, 17 and 25 steps), the stalled one left out; by all four it would read 11.25.
    expect(r.rows.get('stalled')!.stepMs).toBeCloseTo(20, 9);
  });

  it('keeps the 3-point slope when the bend is within the noise of the other rows', () => {
    // The plain row's residual allows 12.71 × √(6 × 64/6) / 8 = 12.7 ms a step; this bend is 60 / 8.
    const runs = new Map([
      ['plain', rowOf(0, [0, 4, 0])],
      ['warm', rowOf(60, [0, 0, 0])],
    ]);
    const warm = rowSteps(runs, 'wall').rows.get('warm')!;
    expect(warm.warmUp).toBeNull();
    expect(warm.stepMs).toBeCloseTo(20 + 60 / 16, 9);
  });

  it('keeps a bend every row shares: a slow middle run on each looks the same with three runs', () => {
    const runs = new Map([
      ['a', rowOf(0, [0, 700, 0])],
      ['b', rowOf(0, [0, 700, 0])],
    ]);
    const r = rowSteps(runs, 'wall');
    for (const s of r.rows.values()) {
      expect(s.warmUp).toBeNull();
      expect(s.stepMs).toBeCloseTo(20, 9);
    }
  });

  it('never reads a first segment flatter than the later runs as a warm-up, nor a row alone', () => {
    const slowFirst = new Map([
      ['plain', rowOf(0, [0, 4, 0])],
      ['slowFirst', rowOf(0, [600, 0, 0])],
    ]);
    expect(rowSteps(slowFirst, 'wall').rows.get('slowFirst')!.warmUp).toBeNull();
    const alone = new Map([['warm', rowOf(600, [0, 0, 0])]]);
    expect(rowSteps(alone, 'wall').rows.get('warm')!.warmUp).toBeNull();
    expect(rowSteps(alone, 'wall').rows.get('warm')!.stepMs).toBeCloseTo(20 + 600 / 16, 9);
  });

  it('cancels over every later run of a row timed longer (1 + 4K, 1 + 8K)', () => {
    const runs = new Map([
      ['plain', rowOf(0, [0, 4, 0])],
      ['warm', rowOf(600, [0, 1, -1, 1, -1], [0, 0, 0, 0, 0], [1, 9, 17, 33, 65])],
    ]);
    const warm = rowSteps(runs, 'wall').rows.get('warm')!;
    expect(warm.warmUp).toBe('warm-up cancelled: the slope of the runs of 9, 17, 33 and 65 steps');
    expect(warm.stepMs).toBeCloseTo(20, 1);
  });
});

describe('clockOf with a warm-up', () => {
  it("keeps the output's span when one row's warm-up bends both clocks", () => {
    // The warm row's 1-step run is 200 ms slow to start, which flattens its wall-clock bend: by the
    // 3-point lines the span (its bend whole) reads less steady than the wall clock.
    const runs = new Map([
      ['plain', rowOf(0, [0, 60, 0], [0, 1, 0])],
      ['warm', rowOf(600, [200, 0, 0, 0], [0, 0, 0, 0], FOUR)],
    ]);
    expect(clockOf(runs, K).clock).toBe('output');
    const warm = rowSteps(runs, 'output').rows.get('warm')!;
    expect(warm.warmUp).toBe(NOTE);
    expect(warm.stepMs).toBeCloseTo(20, 9);
  });
});

describe('noteWithWarmUp', () => {
  it('puts the warm-up clause after the row’s other note, in place of an earlier one, and drops it', () => {
    const refit = 're-fitted at 4: a longer run at 8 went over the memory';
    expect(noteWithWarmUp(null, NOTE)).toBe(NOTE);
    expect(noteWithWarmUp(refit, NOTE)).toBe(`${refit}; ${NOTE}`);
    expect(noteWithWarmUp(`${refit}; ${NOTE}`, null)).toBe(refit);
    expect(noteWithWarmUp(NOTE, null)).toBeNull();
  });
});
