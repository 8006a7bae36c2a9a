// tuneExec's close call (soup probe --exec --try / soup run --try): two configurations within the
// noise get longer runs only when the lower peak would otherwise take the tie from the faster one;
// when the faster also has the lower (or the same) peak, it stands as measured. A trainer with
// fixed costs stands in for the runs: fit and time are given, each run's wall time is start-up +
// steps × step time, with a bump on the middle run that makes the first three runs noisy.
import { describe, expect, it } from 'vitest';
import { useTempDir } from '@soup/test-utils';
import { ckptOf, tuneGradCkpt } from './_tune-exec-test-helpers';
import { type TuneExecOptions, tuneExec } from './tune-exec';

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

/** tuneExec over one lever `x` (G = 32, K = 16, no cache) with the given fit and time: its entry and its notes. */
async function tuneLever(values: string[], fns: Pick<TuneExecOptions, 'fit' | 'time'>) {
  const cwd = useTempDir();
  const notes: string[] = [];
  const r = await tuneExec({
    cache: { env: {}, homeDir: cwd, cwd },
    command: 'train --x {x} --max_steps {probe_steps}',
    tries: { x: values },
    globalBatchSize: 32,
    timeSteps: 16,
    budgetBytes: null,
    gpuName: 'cpu',
    gpuMemoryGb: 0,
    noCache: true,
    onEvent: (e) => notes.push(e.message),
    ...fns,
  });
  return { entry: r.entry, notes };
}

/** tuneExec over one lever `x` (G = 32, K = 16, no cache), each value's costs given; the runs asked, in order. */
async function tuneX(
  costs: Record<string, { m: number; stepMs: number; peakMiB: number; bump?: [number, number]; trials?: number[] }>,
) {
  const asked: string[] = [];
  const walked: string[] = [];
  const xOf = (cmd: string): string => /--x (\S+)/.exec(cmd)![1]!;
  const r = await tuneLever(Object.keys(costs), {
    fit: async (cmd) => {
      const c = costs[xOf(cmd)]!;
      // `trials`: the other micro-batches where the search's 1-step trial fitted (the same run as a timing run of 1).
      const oneStepAt = new Map(
        (c.trials ?? []).map((m) => [m, { ms: 1000 + c.stepMs, spanMs: null, outputChars: null, peakBytes: null }]),
      );
      return { batchSize: c.m, peakBytes: c.peakMiB * 2 ** 20, source: 'probe', oneStepMs: 1000 + c.stepMs, oneStepAt };
    },
    time: async (cmd, steps, m) => {
      const x = xOf(cmd);
      const c = costs[x]!;
      // The walk to the next smaller m (the same step time for fewer samples: slower per sample) is told apart.
      if (m !== c.m) {
        walked.push(`${x}@${m} ${steps}`);
        return { ms: 1000 + steps * c.stepMs };
      }
      asked.push(`${x} ${steps}`);
      // `bump`: [steps, ms] — that run is slow by ms, as a disturbed run on a shared machine.
      return { ms: 1000 + steps * c.stepMs + (c.bump?.[0] === steps ? c.bump[1] : 0) };
    },
  });
  return { entry: r.entry, asked, walked };
}

describe('tuneExec: the order and the noise', () => {
  it('times the smallest micro-batch first, so that a larger one that cannot win stops after two runs', async () => {
    // Given largest first: big (m = 8, 300 ms: 26.7 samples/s) cannot win against small (m = 4, 100 ms: 40).
    const { entry, asked, walked } = await tuneX({
      big: { m: 8, stepMs: 300, peakMiB: 300 },
      small: { m: 4, stepMs: 100, peakMiB: 300 },
    });
    expect(asked).toEqual(['small 17', 'small 33', 'big 17']);
    expect(walked).toEqual(['small@2 1', 'small@2 17', 'big@4 1', 'big@4 17']); // two runs each: cannot win
    expect(entry.rows[0]!.note).toMatch(/^stopped early: cannot win/);
    expect(entry.rows[entry.chosen]!.label).toBe('x=small');
  });

  it("takes the fit search's trial at the smaller m as the walk's 1-step run there", async () => {
    // The same two as above; small's search fitted 1 and 2 on its way to 4, big's 1, 2 and 4 on its way to 8.
    const { entry, asked, walked } = await tuneX({
      big: { m: 8, stepMs: 300, peakMiB: 300, trials: [1, 2, 4] },
      small: { m: 4, stepMs: 100, peakMiB: 300, trials: [1, 2] },
    });
    expect(asked).toEqual(['small 17', 'small 33', 'big 17']);
    expect(walked).toEqual(['small@2 17', 'big@4 17']); // one run each at the smaller m
    expect(entry.rows[0]!.note).toMatch(/^stopped early: cannot win/);
    expect(entry.rows[entry.chosen]!.label).toBe('x=small');
  });

  it('pools the noise of every row: a row whose three runs line up by chance is not taken as noise-free', async () => {
    // a and b are 3 % apart, each with three runs exactly on a line (alone: no noise at all); c's third
    // run is 300 ms slow, the machine's noise. Pooled, a and b are within it, the lower peak on the
    // slower: a close call, run longer. Row by row, a would be clear of b on three runs.
    const { asked } = await tuneX({
      a: { m: 4, stepMs: 100, peakMiB: 300 },
      b: { m: 4, stepMs: 103, peakMiB: 200 },
      c: { m: 4, stepMs: 102, peakMiB: 300, bump: [33, 300] },
    });
    expect(asked.slice(0, 6)).toEqual(['a 17', 'a 33', 'b 17', 'b 33', 'c 17', 'c 33']);
    expect(asked.slice(6, 8)).toEqual(['a 65', 'b 65']);
  });
});

describe('tuneExec: throughput that is not monotone in m', () => {
  it('walks down from the largest m while a smaller one is faster per sample, and chooses it', async () => {
    // x=a fits m = 8, but its step grows with m² (a cache or a kernel that stops scaling): 40 + 10 m² ms, fastest per
    // sample at m = 2 (25 samples/s, against 11.8 at m = 8). x=b fits m = 4 at 200 + 30 m ms (12.5 samples/s at 4,
    // slower below). Timed only at each largest m, b wins.
    const stepMs = { a: (m: number) => 40 + 10 * m * m, b: (m: number) => 200 + 30 * m };
    const r = await tuneLever(['a', 'b'], {
      fit: async (cmd) => {
        const x = /--x (\w)/.exec(cmd)![1] as 'a' | 'b';
        const m = x === 'a' ? 8 : 4;
        return { batchSize: m, peakBytes: 300 * 2 ** 20, source: 'probe', oneStepMs: 1000 + stepMs[x](m) };
      },
      time: async (cmd, steps, m) => ({ ms: 1000 + steps * stepMs[/--x (\w)/.exec(cmd)![1] as 'a' | 'b'](m) }),
    });
    const chosen = r.entry.rows[r.entry.chosen]!;
    expect(chosen).toMatchObject({ label: 'x=a', microBatchSize: 2, accumulation: 16 });
    expect(chosen.samplesPerSecond).toBeCloseTo(25, 1);
    expect(chosen.note).toMatch(/^walked down from micro-batch 4/);
    expect(r.notes.filter((n) => /is faster than/.test(n))).toEqual([
      'x=a: micro-batch 4 is faster than 8 (20.0 against 11.8 samples/s, and 20.0 against 11.8 timed again side by ' +
        'side): timing the next smaller one',
      'x=a: micro-batch 2 is faster than 4 (25.0 against 20.0 samples/s, and 25.0 against 20.0 timed again side by ' +
        'side): timing the next smaller one',
    ]);
    // b's walk below its m = 4 is slower: it stays at 4.
    expect(r.entry.rows.find((row) => row.label === 'x=b')).toMatchObject({ microBatchSize: 4 });
  });

  it("walks down on the fit search's 1-step trials where it ran them, and takes their peak", async () => {
    // x=a as above (40 + 10 m² ms a step, fits m = 8), its search having fitted 1, 2 and 4 (m × 50 MiB); the timing
    // runs report no peak. Each smaller m's 1-step run is the trial: the only runs of one step at 4 and 2 are the
    // side-by-side timings' fresh ones.
    const stepMs = (m: number): number => 40 + 10 * m * m;
    const oneStepAt = new Map(
      [1, 2, 4].map((m) => [m, { ms: 1000 + stepMs(m), spanMs: null, outputChars: null, peakBytes: m * 50 * 2 ** 20 }]),
    );
    const runs: string[] = [];
    const r = await tuneLever(['a'], {
      fit: async () => ({
        batchSize: 8,
        peakBytes: 400 * 2 ** 20,
        source: 'probe',
        oneStepMs: 1000 + stepMs(8),
        oneStepAt,
      }),
      time: async (_cmd, steps, m) => {
        runs.push(`${m} ${steps}`);
        return { ms: 1000 + steps * stepMs(m) };
      },
    });
    expect(r.entry.rows[r.entry.chosen]).toMatchObject({ microBatchSize: 2, peakBytes: 100 * 2 ** 20 });
    // Each walk step: the 1 + K and 1 + 2K runs, then the side-by-side timing (m 1, smaller 1, smaller 33, m 33).
    expect(runs.filter((x) => x.endsWith(' 1'))).toEqual(['8 1', '4 1', '4 1', '2 1']);
    expect(runs.filter((x) => x.startsWith('1 '))).toEqual(['1 17']); // m = 1: its trial and one run, slower
  });

  it('stays where a smaller m read faster once but not when both are timed again side by side', async () => {
    // x=a fits m = 4 at 200 + 30 m ms a step: 12.5 samples/s at 4, 7.7 at 2. The first runs at 2 meet a transient (a
    // slow start-up in the 1-step run, a fast machine in the longest), on a straight line of 100 ms a step: 20
    // samples/s. The runs timed again side by side are the truth.
    const stepMs = (m: number): number => 200 + 30 * m;
    const transient = new Map([
      ['2 1', 3260],
      ['2 17', 4860],
      ['2 33', 6460],
    ]);
    const seen = new Set<string>();
    const r = await tuneLever(['a'], {
      fit: async () => ({ batchSize: 4, peakBytes: 300 * 2 ** 20, source: 'probe', oneStepMs: 1000 + stepMs(4) }),
      time: async (_cmd, steps, m) => {
        const key = `${m} ${steps}`;
        const first = !seen.has(key);
        seen.add(key);
        return { ms: (first ? transient.get(key) : undefined) ?? 1000 + steps * stepMs(m) };
      },
    });
    expect(r.entry.rows[r.entry.chosen]).toMatchObject({ label: 'x=a', microBatchSize: 4, accumulation: 8 });
    expect(r.notes.filter((n) => /micro-batch 2/.test(n))).toEqual([
      'x=a: micro-batch 2 read faster than 4 (20.0 against 12.5 samples/s) but not when both were timed again side ' +
        'by side (7.7 against 12.5): 4 stands',
    ]);
  });
});
