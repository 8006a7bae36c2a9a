// A heavier candidate timed before its fit (soup train's tuner, time-first): where it may be, and
// that its fit (a probe child) runs only when the timing says it can win.
import { describe, expect, it } from 'vitest';
import { timeFirstAt, timeThenFit } from './time-first';

const MiB = 2 ** 20;
const G32 = [1, 2, 4, 8, 16, 32];

describe('timeFirstAt', () => {
  const at = (o: Partial<Parameters<typeof timeFirstAt>[0]>) =>
    timeFirstAt({ device: 'cpu', divisors: G32, floor: 16, lighterPeak: 255 * MiB, holdBytes: 8192 * MiB, ...o });

  it(
    "on the CPU, the one micro-batch above the lighter ones' largest, with a bound of twice their peak " +
      'scaled to it',
    () => {
      expect(at({})).toEqual({ m: 32, boundBytes: 2 * 2 * 255 * MiB });
      expect(at({ divisors: [1, 2, 3, 4, 6, 12], floor: 4 })).toBeNull(); // 6 and 12 above 4: fit first
      expect(at({ divisors: [1, 2, 3, 6], floor: 3 })).toEqual({ m: 6, boundBytes: 2 * 2 * 255 * MiB });
    },
  );

  it(
    'is null where the fit must come first: a GPU, several micro-batches above, no lighter peak, too little ' +
      'memory, no floor',
    () => {
      expect(at({ device: 'cuda' })).toBeNull();
      expect(at({ floor: 8 })).toBeNull();
      expect(at({ lighterPeak: null })).toBeNull();
      expect(at({ holdBytes: 4 * 255 * MiB - 1 })).toBeNull();
      expect(at({ holdBytes: 4 * 255 * MiB })).not.toBeNull();
      expect(at({ floor: 0, divisors: [1] })).toBeNull();
    },
  );
});

describe('timeThenFit', () => {
  const run = async (stoppedEarly: boolean, fit: { batchSize: number } | null) => {
    const calls: string[] = [];
    const got = await timeThenFit({
      time: async () => (calls.push('time'), { stoppedEarly, stepMs: 900 }),
      fit: async () => (calls.push('fit'), fit),
      fitsAt: (r) => r.batchSize === 32,
    });
    return { got, calls };
  };

  it('never fits a candidate whose timing stopped early: it cannot win whether it fits or not', async () => {
    const { got, calls } = await run(true, { batchSize: 32 });
    expect(calls).toEqual(['time']);
    expect(got).toEqual({ kind: 'cannot-win', timing: { stoppedEarly: true, stepMs: 900 } });
  });

  it('fits one that can win, after its timing, and says whether the fit reached the micro-batch timed', async () => {
    const fits = await run(false, { batchSize: 32 });
    expect(fits.calls).toEqual(['time', 'fit']);
    expect(fits.got).toEqual({ kind: 'fits', timing: { stoppedEarly: false, stepMs: 900 }, fit: { batchSize: 32 } });
    expect((await run(false, null)).got.kind).toBe('does-not-fit');
    expect((await run(false, { batchSize: 16 })).got.kind).toBe('does-not-fit');
  });
});
