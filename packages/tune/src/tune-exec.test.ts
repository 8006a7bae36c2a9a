// tuneExec's close call (soup probe --exec --try / soup run --try): two configurations within the
// noise get longer runs only when the lower peak would otherwise take the tie from the faster one;
// when the faster also has the lower (or the same) peak, it stands as measured. A trainer with
// fixed costs stands in for the runs: fit and time are given, each run's wall time is start-up +
// steps × step time, with a bump on the middle run that makes the first three runs noisy.
import { describe, expect, it } from 'vitest';
import { ckptOf, tuneGradCkpt } from './_tune-exec-test-helpers';

/** tuneExec over grad_ckpt=false (m = 4, 100 ms a step) and true (m = 8, 210 ms): the runs it asked for, by steps. */
async function tuneWith(peaks: { false: number; true: number }) {
  const K = 16;
  const asked: number[] = [];
  const costs = { false: { m: 4, stepMs: 100 }, true: { m: 8, stepMs: 210 } };
  const r = await tuneGradCkpt({
    timeSteps: K,
    fit: async (cmd) => {
      const c = ckptOf(cmd);
      return { batchSize: costs[c].m, peakBytes: peaks[c], source: 'probe', oneStepMs: 1000 + costs[c].stepMs };
    },
    time: async (cmd, steps) => {
      asked.push(steps);
      const c = costs[ckptOf(cmd)];
      // The run of 1 + K steps is 700 ms slow on both: a disturbed run, as on a shared machine.
      return { ms: 1000 + steps * c.stepMs + (steps === 1 + K ? 700 : 0) };
    },
  });
  return { entry: r.entry, longer: asked.filter((s) => s > 1 + 2 * K) };
}

describe('tuneExec: a close call', () => {
  it('gives the faster its place without longer runs when it also has the lower or the same peak', async () => {
    for (const peaks of [
      { false: 300 * 2 ** 20, true: 300 * 2 ** 20 },
      { false: 250 * 2 ** 20, true: 300 * 2 ** 20 },
    ]) {
      const { entry, longer } = await tuneWith(peaks);
      expect(entry.rows[entry.chosen]!.values.grad_ckpt).toBe('false');
      expect(entry.reason).toMatch(/within the measured noise/); // it was a close call
      expect(longer).toEqual([]);
    }
  });

  it(
    'gives both longer runs when the lower peak is on the slower one, and only then the tie to the ' + 'lower peak',
    async () => {
      const { entry, longer } = await tuneWith({ false: 300 * 2 ** 20, true: 200 * 2 ** 20 });
      // 1 + 4K, then 1 + 8K: the disturbed run still leaves them within the pooled noise.
      expect(longer).toEqual([65, 65, 129, 129]);
      expect(entry.rows[entry.chosen]!.values.grad_ckpt).toBe('true');
      expect(entry.reason).toMatch(/its peak is lower: the lower peak wins a tie/);
    },
  );
});
