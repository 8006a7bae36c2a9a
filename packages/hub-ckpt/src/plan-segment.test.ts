import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidCheckpointOptionError } from './errors';
import { planSegment } from './plan-segment';

describe('planSegment', () => {
  it('the P4 probe numbers: 180 steps, push every 60, stop after 120, then to the horizon', () => {
    const leg1 = planSegment({ horizon: 180, pushEvery: 60, stopAfterSteps: 120 });
    expect(leg1).toEqual({
      horizon: 180,
      pushEvery: 60,
      startStep: 0,
      stopStep: 120,
      pushSteps: [60, 120],
      segmentStop: true,
      pushFinal: false,
    });
    const leg2 = planSegment({ horizon: 180, pushEvery: 60, stopAfterSteps: 0, startStep: 120 });
    expect(leg2).toEqual({
      horizon: 180,
      pushEvery: 60,
      startStep: 120,
      stopStep: 180,
      pushSteps: [180],
      segmentStop: false,
      pushFinal: true,
    });
  });

  it('a stop off the push cadence is still pushed, so the next session resumes exactly there', () => {
    expect(planSegment({ horizon: 50, pushEvery: 20, stopAfterSteps: 30 })).toMatchObject({
      stopStep: 30,
      pushSteps: [20, 30],
      segmentStop: true,
    });
    expect(planSegment({ horizon: 50, pushEvery: 20, startStep: 30 })).toMatchObject({
      stopStep: 50,
      pushSteps: [40],
      pushFinal: true,
    });
  });

  it('resuming at the horizon (crash before the final push) plans only the final push', () => {
    expect(planSegment({ horizon: 10, pushEvery: 5, startStep: 10 })).toMatchObject({
      stopStep: 10,
      pushSteps: [],
      segmentStop: false,
      pushFinal: true,
    });
  });

  it('names the bad field', () => {
    const field = (f: () => unknown): string => {
      try {
        f();
      } catch (e) {
        expect(e).toBeInstanceOf(InvalidCheckpointOptionError);
        return (e as InvalidCheckpointOptionError).field;
      }
      throw new Error('did not throw');
    };
    expect(field(() => planSegment({ horizon: 0, pushEvery: 1 }))).toBe('horizon');
    expect(field(() => planSegment({ horizon: 10, pushEvery: 0 }))).toBe('pushEvery');
    expect(field(() => planSegment({ horizon: 10, pushEvery: 2, stopAfterSteps: -1 }))).toBe('stopAfterSteps');
    expect(field(() => planSegment({ horizon: 10, pushEvery: 2, startStep: 11 }))).toBe('startStep');
    expect(field(() => planSegment({ horizon: 10.5, pushEvery: 2 }))).toBe('horizon');
  });

  it('chained sessions cover every push step once, each starting where the last one stopped (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 400 }),
        fc.integer({ min: 1, max: 90 }),
        fc.integer({ min: 0, max: 150 }),
        (horizon, pushEvery, stopAfter) => {
          let start = 0;
          const pushed: number[] = [];
          for (let session = 0; session < 1000; session++) {
            const plan = planSegment({ horizon, pushEvery, stopAfterSteps: stopAfter, startStep: start });
            expect(plan.stopStep).toBeGreaterThan(start === horizon ? start - 1 : start);
            expect(plan.segmentStop).toBe(plan.stopStep < horizon);
            expect(plan.pushFinal).toBe(!plan.segmentStop);
            for (const s of plan.pushSteps) {
              expect(s).toBeGreaterThan(start);
              expect(s).toBeLessThanOrEqual(plan.stopStep);
              expect(s % pushEvery === 0 || (plan.segmentStop && s === plan.stopStep)).toBe(true);
            }
            if (plan.segmentStop) expect(plan.pushSteps[plan.pushSteps.length - 1]).toBe(plan.stopStep);
            pushed.push(...plan.pushSteps);
            if (plan.pushFinal) break;
            start = plan.stopStep;
          }
          expect(pushed).toEqual([...new Set(pushed)].sort((a, b) => a - b));
          for (let s = pushEvery; s <= horizon; s += pushEvery) expect(pushed).toContain(s);
        },
      ),
      { numRuns: 300 },
    );
  });
});
