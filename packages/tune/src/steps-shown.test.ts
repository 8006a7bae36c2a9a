// stepsShown: a row's timing runs show their steps by the trainer's count, the output's growth or
// the wall clock's; a trainer that stops early at any step is caught.
import { describe, expect, it } from 'vitest';
import { stepsShown, type StepsRun } from './steps-shown';

const runsOf = (steps: number[], run: (n: number) => StepsRun): Map<number, StepsRun> =>
  new Map(steps.map((n) => [n, run(n)]));

describe('stepsShown', () => {
  it('catches a trainer that stops after D steps: by its output for D − 1 < 1.8K, by the wall for D ≤ 1 + K', () => {
    const shown = (K: number, cap: number, chars: (ran: number) => number): boolean =>
      stepsShown(
        runsOf([1, 1 + K, 1 + 2 * K], (n) => {
          const ran = Math.min(n, cap);
          return { wallMs: 900 + 40 * ran, outputChars: chars(ran) };
        }),
      ).shown;
    for (const K of [4, 8, 16]) {
      for (let cap = 1; cap - 1 < 1.8 * K; cap++)
        expect(
          shown(K, cap, (ran) => 20 + 30 * ran),
          `output ${K} ${cap}`,
        ).toBe(false);
      for (let cap = 1; cap <= 1 + K; cap++)
        expect(
          shown(K, cap, () => 20),
          `wall ${K} ${cap}`,
        ).toBe(false);
      expect(shown(K, 1 + 2 * K, (ran) => 20 + 30 * ran)).toBe(true);
      expect(shown(K, 1 + 2 * K, () => 20)).toBe(true);
    }
  });

  it('lets output that grew decide: a stop it shows is caught where a disturbed wall clock would pass it', () => {
    // Runs of 1, 5, 9 steps of 120 ms that stopped after 3; the run of 9 is 60 ms slow (a busy machine).
    const runs = runsOf([1, 5, 9], (n) => {
      const ran = Math.min(n, 3);
      return { wallMs: 900 + 120 * ran + (n === 9 ? 60 : 0), outputChars: 40 + 30 * ran };
    });
    expect(stepsShown(runs)).toMatchObject({
      shown: false,
      why: expect.stringMatching(/printed 70, 130, 130 characters/),
    });
    const silent = new Map([...runs].map(([n, r]) => [n, { wallMs: r.wallMs, outputChars: 12 }]));
    expect(stepsShown(silent)).toEqual({ shown: true, by: 'wall' }); // the wall clock alone cannot tell
  });

  it('takes steps that ran, with a disturbed run, by the output or the wall clock', () => {
    const steps = [1, 17, 33];
    const bump = (n: number): number => (n === 17 ? 700 : 0);
    expect(stepsShown(runsOf(steps, (n) => ({ wallMs: 1000 + 100 * n + bump(n), outputChars: 30 * n })))).toEqual({
      shown: true,
      by: 'output',
    });
    expect(stepsShown(runsOf(steps, (n) => ({ wallMs: 1000 + 100 * n + bump(n), outputChars: 12 })))).toEqual({
      shown: true,
      by: 'wall',
    });
  });

  it('holds the wall clock to the noise: a flat run that grew by less than twice it is not timed', () => {
    const flat = runsOf([1, 9, 17], (n) => ({ wallMs: 1000 + n }));
    expect(stepsShown(flat).shown).toBe(true); // no noise known: 16 ms over 16 steps is growth
    expect(stepsShown(flat, 50)).toMatchObject({ shown: false, why: expect.stringMatching(/^not timed/) });
  });

  it("trusts the trainer's own count over the clocks", () => {
    const counted = (seen: (n: number) => number) =>
      stepsShown(runsOf([1, 9, 17], (n) => ({ wallMs: 1000 + 50 * n, outputChars: 30 * n, stepsSeen: seen(n) })));
    expect(counted((n) => n)).toEqual({ shown: true, by: 'trainer' });
    expect(counted((n) => Math.min(n, 8))).toEqual({
      shown: false,
      why: 'not timed: the trainer counted 8 steps in a run of 9',
    });
  });

  it('takes a count without the one-step run (the fit trial carries none); a run counted short is never timed', () => {
    // Output and wall clock grow in step: a trainer that evaluated for the steps it skipped.
    const runs = (seen: (n: number) => number) =>
      runsOf([1, 9, 17], (n) => ({
        wallMs: 1000 + 50 * n,
        outputChars: 30 * n,
        ...(n > 1 ? { stepsSeen: seen(n) } : {}),
      }));
    expect(stepsShown(runs((n) => n))).toEqual({ shown: true, by: 'trainer' });
    expect(stepsShown(runs((n) => Math.min(n, 16)))).toEqual({
      shown: false,
      why: 'not timed: the trainer counted 16 steps in a run of 17',
    });
  });
});
