// tuneExec's timing runs must show their steps, and a longer run over the memory moves a row to the
// next smaller divisor. A trainer's known costs stand in for the runs: each run's wall time is
// start-up + steps × step time, its output a header and a line a step.
import { useTempDir } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import { type TimeAnswer, tuneExec } from './tune-exec';

interface Costs {
  m: number;
  stepMs: number;
  /** The trainer stops after this many steps whatever {probe_steps} says. */
  cap?: number;
  /** Prints nothing (no output to time by). */
  silent?: boolean;
  /** A run at m over this many steps goes over the memory (a peak that grows with the steps). */
  overAfter?: { m: number; steps: number };
}

/** tuneExec over one lever `x` (G = 32, K = 16, no cache). */
async function tuneX(costs: Record<string, Costs>) {
  const cwd = useTempDir();
  const xOf = (cmd: string): string => /--x (\S+)/.exec(cmd)![1]!;
  const notes: string[] = [];
  const r = await tuneExec({
    cache: { env: {}, homeDir: cwd, cwd },
    command: 'train --x {x} --max_steps {probe_steps}',
    tries: { x: Object.keys(costs) },
    globalBatchSize: 32,
    timeSteps: 16,
    budgetBytes: 400 * 2 ** 20,
    gpuName: 'cpu',
    gpuMemoryGb: 0,
    noCache: true,
    onEvent: (e) => notes.push(e.message),
    fit: async (cmd) => ({ batchSize: costs[xOf(cmd)]!.m, peakBytes: 2 ** 28, source: 'probe', oneStepMs: null }),
    time: async (cmd, steps, m): Promise<TimeAnswer> => {
      const c = costs[xOf(cmd)]!;
      if (c.overAfter && m >= c.overAfter.m && steps > c.overAfter.steps)
        return { error: `over the budget over ${steps} steps`, overMemory: true };
      const ran = Math.min(steps, c.cap ?? steps);
      const stepMs = (c.stepMs * m) / c.m;
      return {
        ms: 1000 + ran * stepMs,
        ...(c.silent ? { outputChars: 0 } : { outputSpanMs: (ran - 1) * stepMs, outputChars: 40 + 30 * ran }),
        peakBytes: 2 ** 27 * m,
      };
    },
  });
  return { entry: r.entry, notes };
}

describe('tuneExec: a timing run must show its steps', () => {
  it('never chooses a row whose trainer stopped before {probe_steps}, whatever step it stopped at', async () => {
    // capped: m = 4 at 50 ms a step would be 2× honest, but it runs at most `cap` steps of any run.
    for (const cap of [1, 2, 9, 17]) {
      const { entry } = await tuneX({
        honest: { m: 4, stepMs: 100 },
        capped: { m: 4, stepMs: 50, cap },
      });
      const capped = entry.rows.find((r) => r.label === 'x=capped')!;
      expect(entry.rows[entry.chosen]!.label, `cap ${cap}`).toBe('x=honest');
      expect(capped.note, `cap ${cap}`).toMatch(/^not timed: the runs of 1, 17, 33 steps took/);
      expect(capped.samplesPerSecond).toBeNull();
    }
  });

  it('does not push the other rows onto the wall clock: a silent row not timed is left out of it', async () => {
    const { entry } = await tuneX({
      honest: { m: 4, stepMs: 100 },
      capped: { m: 4, stepMs: 50, cap: 2, silent: true },
    });
    expect(entry.rows[entry.chosen]!.label).toBe('x=honest');
    expect(entry.timedBy).toMatch(/^the span of the trainer's output/);
  });
});

describe('tuneExec: a longer run over the memory', () => {
  it('re-fits the row at the next smaller divisor instead of dropping it', async () => {
    // grows: fits 8 in one step, but 17 steps at 8 go over; at 4 every run fits. slow: m = 8, 3× the step.
    const { entry, notes } = await tuneX({
      grows: { m: 8, stepMs: 100, overAfter: { m: 8, steps: 1 } },
      slow: { m: 8, stepMs: 300 },
    });
    const grows = entry.rows.find((r) => r.label === 'x=grows')!;
    expect(grows).toMatchObject({ microBatchSize: 4, accumulation: 8, peakBytes: 2 ** 29 });
    expect(grows.note).toMatch(/^re-fitted at 4: a longer run at 8 went over the memory/);
    expect(grows.samplesPerSecond).toBeCloseTo(32 / ((8 * 50) / 1000), 5);
    expect(entry.rows[entry.chosen]!.label).toBe('x=grows');
    expect(notes).toContain(
      'x=grows: timing run of 17 steps failed: over the budget over 17 steps at micro-batch 8; timing it at 4',
    );
  });
});
