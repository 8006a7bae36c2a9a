// The Node twin: a real trainer (a child process, timed through the command probe that tuneExec's
// runs use) whose first steps are slow, against the same trainer without a warm-up. Its runs of 1,
// 1 + K and 1 + 2K steps bend; the slope of the later two holds the steady step alone.
import { createCommandProbe } from '@soup/cuda-probe';
import { useTempDir } from '@soup/test-utils';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { WARM_UP_TRAINER } from './_warm-up-test-helpers';
import { commandTime } from './command-adapter';
import { clockOf, type TimedRun } from './output-clock';
import { rowSteps } from './warm-up';

const K = 8;

describe('a real trainer with a warm-up', () => {
  it('is timed by the slope of its runs of 1 + K and 1 + 2K steps, near the same trainer without one', async () => {
    const dir = useTempDir();
    const trainer = join(dir, 'train.mjs');
    writeFileSync(trainer, WARM_UP_TRAINER);
    const time = commandTime((command) => createCommandProbe({ command, timeoutMs: 20_000 }));
    // warm: 20 ms a step, steps 1 to 3 take 375 ms more (750 ms in every run but the first); plain: the
    // same without it; other: 30 ms a step (a third row: the noise a bend is judged by has two degrees
    // of freedom, not one, whose estimate swings by 10× under load).
    const rows = {
      plain: '--step_ms 20 --warmup_steps 0',
      other: '--step_ms 30 --warmup_steps 0',
      warm: '--step_ms 20 --warmup_steps 3',
    };
    const runs = new Map<string, Map<number, TimedRun>>();
    for (const [row, warmUp] of Object.entries(rows)) {
      const cmd = `${process.execPath} ${trainer} --max_steps {probe_steps} ${warmUp} --warmup_ms 375`;
      const pts = new Map<number, TimedRun>();
      for (const steps of [1, 1 + K, 1 + 2 * K]) {
        const t = await time(cmd, steps, 1);
        if ('error' in t) throw new Error(t.error);
        pts.set(steps, { wallMs: t.ms, spanMs: t.outputSpanMs ?? null });
      }
      runs.set(row, pts);
    }
    // By whichever clock the tuner would time them: the output's span as a rule; the wall clock when
    // the two differ by over 2 % (they can under load, the bend left out of the noise).
    const clock = clockOf(runs, K);
    const seen = `${clock.why}; ${JSON.stringify([...runs].map(([row, pts]) => [row, [...pts.values()]]))}`;
    const steps = rowSteps(runs, clock.clock);
    const plain = steps.rows.get('plain')!;
    const warm = steps.rows.get('warm')!;
    expect(warm.warmUp, seen).toBe('warm-up cancelled: the slope of the runs of 9 and 17 steps');
    expect([plain.warmUp, steps.rows.get('other')!.warmUp], seen).toEqual([null, null]);
    // A wide band (the later runs are 8 steps apart: a stall under load moves their slope by a third):
    // the 3-point slope of the warm runs is 20 + 750 / 16 = 67 ms (3.3×) by either clock.
    const ratio = warm.stepMs / plain.stepMs;
    expect(ratio, `warm ${warm.stepMs} ms a step, plain ${plain.stepMs}; ${seen}`).toBeGreaterThan(0.5);
    expect(ratio, `warm ${warm.stepMs} ms a step, plain ${plain.stepMs}; ${seen}`).toBeLessThan(2);
  }, 30_000);
});
