import { describe, expect, it } from 'vitest';
import { pathOf, samePaths, type PlanRun } from './plan-paths';

const run = (path: string, seconds: number): PlanRun => ({ path, seconds, fitsSeconds: 3 });

describe('pathOf', () => {
  it('names the timed rows in order, marks those stopped early, and leaves out the rows never timed', () => {
    const rows = [
      { values: { gradient_checkpointing: 'false' }, microBatchSize: 16, stepMs: 600, note: 'timed side by side' },
      { values: { gradient_checkpointing: 'false' }, microBatchSize: 2, stepMs: 87, note: 'stopped early: cannot win' },
      { values: { gradient_checkpointing: 'full' }, microBatchSize: null, stepMs: null, note: 'cannot win: …' },
      { values: { gradient_checkpointing: 'selective' }, microBatchSize: 8, stepMs: null, note: null },
    ];
    expect(pathOf(rows)).toBe('false@16 false@2~');
  });
});

describe('samePaths', () => {
  it('compares the sides only on the paths both took, each weighted by its scarcer side', () => {
    const before = [run('a', 20), run('a', 22), run('a', 21), run('b', 24), run('c', 30)];
    const after = [run('a', 21), run('b', 24.5), run('b', 26), run('d', 18)];
    const r = samePaths(before, after);
    expect(r.paths.map((p) => [p.path, p.before, p.after])).toEqual([
      ['a', [20, 22, 21], [21]],
      ['b', [24], [24.5, 26]],
    ]);
    // a: 21 / 21 = 1; b: 25.25 / 24; one pair each.
    expect(r.runsCompared).toBe(2);
    expect(r.pooled).toBeCloseTo(Math.sqrt(25.25 / 24), 10);
  });

  it('says null where the sides shared no path, rather than a ratio of different work', () => {
    const r = samePaths([run('a', 20)], [run('b', 10)]);
    expect(r).toEqual({ paths: [], pooled: null, runsCompared: 0 });
  });
});
