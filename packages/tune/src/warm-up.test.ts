// A trainer's warm-up cancelled by the slope of its later runs, on fixed runs: start-up + steps ×
// step time, a warm-up of slow steps where one is given, and a few ms of noise per run.
import { describe, expect, it } from 'vitest';
import { clockOf, type TimedRun } from './output-clock';
import { noteWithWarmUp, rowSteps } from './warm-up';

const K = 8;
const STEPS = [1, 1 + K, 1 + 2 * K];
const NOTE = 'warm-up cancelled: the slope of the runs of 9 and 17 steps';

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
  it('takes the slope of the runs of 1 + K and 1 + 2K steps when the bend is beyond the other rows’ noise', () => {
    const runs = new Map([
      ['plain', rowOf(0, [0, 4, 0])],
      ['warm', rowOf(600, [0, -3, 2])],
    ]);
    const r = rowSteps(runs, 'wall');
    const warm = r.rows.get('warm')!;
    // The later runs: (1000 + 340 + 600 + 2 − (1000 + 180 + 600 − 3)) / 8; the 3-point slope is 57.6.
    expect(warm.stepMs).toBeCloseTo(165 / 8, 9);
    expect(warm.warmUp).toBe(NOTE);
    expect(r.rows.get('plain')!.warmUp).toBeNull();
    expect(r.rows.get('plain')!.stepMs).toBeCloseTo(20, 9);
    // The pooled noise is the plain row's residual alone: the warm row's three runs leave none.
    expect(r.dof).toBe(1);
    expect(r.variance).toBeCloseTo(64 / 6, 9);
    expect(warm.seMs).toBeCloseTo(Math.sqrt(64 / 6 / 32), 9);
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
      ['warm', rowOf(600, [200, 0, 0])],
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
