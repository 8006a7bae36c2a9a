// A trainer command that takes {probe_steps} is probed over PROBE_STEPS steps (real children: the known-cost Node
// trainer, whose --grow_per_sample_mib holds more memory at each step after the first). One step of m = 4 fits
// the budget; three steps do not: the answer is the size that fits over three, and the growth at it is measured.
import { useTempDir } from '@soup/test-utils';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PROBE_STEPS, stepGrowth, withProbeSteps } from './probe-steps';
import { resolveTrainerBatch } from './trainer-batch';
import { type TrainerProbeOptions, trainerTrialProbe } from './trainer-probe';

const TWIN = fileURLToPath(new URL('../../../examples/known-cost-trainer/train.mjs', import.meta.url));
const MiB = 2 ** 20;

describe('{probe_steps}: memory beyond the first step', () => {
  it('answers the size that fits over three steps, and measures what steps 2–3 added', async () => {
    const cwd = useTempDir();
    const bare = process.memoryUsage().rss; // a node holding nothing, about the trainer's own baseline
    const trainer: TrainerProbeOptions = {
      env: { PATH: process.env.PATH, HOME: cwd },
      cwd,
      signal: new AbortController().signal,
      identity: { device: 'cpu', gpuName: 'cpu', gpuMemoryGb: 23 },
      deviceId: 0,
      // 64 MiB a sample at the first step, 32 more a sample at each later one: 1 step of 4 holds 256 MiB and fits,
      // 3 steps of 4 hold 512 and do not; 3 steps of 2 hold 256.
      budgetBytes: Math.round(bare + 300 * MiB),
      timeoutMs: 60_000,
      maxLength: 8,
      quantization: 'none',
      loraR: 0,
    };
    const command =
      `${JSON.stringify(process.execPath)} ${TWIN} --micro_batch_size {batch_size} --max_steps {probe_steps} ` +
      '--per_sample_mib 64 --grow_per_sample_mib 32';
    const { resolution: r } = await resolveTrainerBatch({
      ...trainer,
      command,
      start: 4,
      ceiling: 4,
      refresh: true,
      noCache: true,
      cacheExceptionsOnly: false,
      predict: false,
    });
    expect(r.trials.map((t) => [t.batch_size, t.result])).toContainEqual([4, 'over-budget']);
    expect(r.batchSize).toBe(2);
    const g = await stepGrowth({
      oneStep: trainerTrialProbe(withProbeSteps(command, 1), trainer),
      batchSize: 2,
      peakBytes: r.chosen!.peak_bytes,
    });
    expect(g.steps).toBe(PROBE_STEPS);
    // Steps 2 and 3 hold 2 × 32 MiB a sample more at m = 2: 128 MiB, give or take the sampling and the runtime.
    expect(g.growthBytes! / MiB).toBeGreaterThan(100);
    expect(g.growthBytes! / MiB).toBeLessThan(160);
  });
});
