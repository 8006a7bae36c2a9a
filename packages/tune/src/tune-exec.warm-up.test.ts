// tuneExec on a real trainer (child processes, timed through the command probe) whose first steps
// are slow: the warmed configuration is timed by the slope of its runs of 1 + K and 1 + 2K steps,
// not read as slower than the same trainer without a warm-up.
import { createCommandProbe } from '@soup/cuda-probe';
import { useTempDir } from '@soup/test-utils';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { WARM_UP_TRAINER } from './_warm-up-test-helpers';
import { commandTime } from './command-adapter';
import { tuneExec } from './tune-exec';

describe('tuneExec: a trainer with a warm-up', () => {
  it('cancels the warm-up by the slope of the later runs: the warmed row times near the one without', async () => {
    const cwd = useTempDir();
    const trainer = join(cwd, 'train.mjs');
    writeFileSync(trainer, WARM_UP_TRAINER);
    // w = 3: steps 1 to 3 take 375 ms more (750 ms more in every run but the first); 0: none; 1: only the
    // first (in every run, so no bend). Steps of 40 ms, K = 16: the later runs are 640 ms of steps apart, so
    // a stall of 250 ms under load moves a slope by under 16 ms. Timed in that order: a warmed row timed after
    // a faster one would be stopped early on its runs of 1 and 1 + K steps, which hold the whole warm-up.
    const r = await tuneExec({
      cache: { env: {}, homeDir: cwd, cwd },
      command:
        `${process.execPath} ${trainer} --max_steps {probe_steps} --step_ms 40 ` + '--warmup_steps {w} --warmup_ms 375',
      tries: { w: ['3', '0', '1'] },
      globalBatchSize: 4, // m = 1 fits: no smaller micro-batch to walk to
      timeSteps: 16,
      budgetBytes: null,
      gpuName: 'cpu',
      gpuMemoryGb: 0,
      noCache: true,
      fit: async () => ({ batchSize: 1, peakBytes: null, source: 'given', oneStepMs: null }),
      time: commandTime((command) => createCommandProbe({ command, timeoutMs: 20_000 })),
    });
    const row = (w: string) => r.entry.rows.find((x) => x.values.w === w)!;
    const seen = JSON.stringify(r.entry.rows.map((x) => [x.label, x.stepMs, x.noiseMs, x.note]));
    expect(row('3').note, seen).toBe('warm-up cancelled: the slope of the runs of 17, 33 and 49 steps');
    expect(row('0').note, seen).toBeNull();
    // w = 1 ties w = 0: it may be stopped early ("cannot win" by the noise), but never reads as a warm-up.
    expect(row('1').note ?? '', seen).not.toMatch(/warm-up/);
    // A band wide for a stall (0.61–1.39× at 250 ms); by the 3-point slope the warmed row is 40 + 750 / 32 = 63 ms a
    // step, 1.59× the plain row's.
    const ratio = row('0').samplesPerSecond! / row('3').samplesPerSecond!;
    expect(ratio, seen).toBeGreaterThan(0.6);
    expect(ratio, seen).toBeLessThan(1.5);
  }, 30_000);
});
