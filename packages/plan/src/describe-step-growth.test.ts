import { describe, expect, it } from 'vitest';
import { describeStepGrowth } from './probe-steps';

describe('describeStepGrowth: the growth as one line', () => {
  it('the peak, the one-step peak and what steps 2–3 added; or why it is unknown', () => {
    const MiB = 2 ** 20;
    const g = { steps: 3, peakBytes: 300 * MiB, oneStepPeakBytes: 200 * MiB, growthBytes: 100 * MiB, unknown: null };
    expect(describeStepGrowth(g)).toBe(
      "memory over the trial's 3 steps: peak 300 MiB, 200 MiB after one step (+100 MiB in steps 2–3)",
    );
    expect(describeStepGrowth({ ...g, oneStepPeakBytes: 400 * MiB, growthBytes: -100 * MiB })).toMatch(
      /400 MiB after one step \(−100 MiB in steps 2–3\)$/,
    );
    const unknown = {
      ...g,
      oneStepPeakBytes: null,
      growthBytes: null,
      unknown: 'no peak was measured (pass --budget)',
    };
    expect(describeStepGrowth(unknown)).toBe(
      "memory growth over the trial's 3 steps: unknown (no peak was measured (pass --budget))",
    );
  });
});
