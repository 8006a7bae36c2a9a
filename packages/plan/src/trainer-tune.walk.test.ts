// --try for a trainer command whose step grows faster than m (real children: the known-cost Node trainer, a step of
// 20 m² ms, a blocking sleep): at G = 2, m = 2 fits (no budget) and takes 40 ms a sample, m = 1 takes 20. A tuner
// that times only the largest m answers 2; the walk below it, the move confirmed by both micro-batches timed again
// side by side, answers 1. The step down is 2× faster per sample, and m = 1's step is 20 ms: under a load of 9 on 2
// cores the margin the noise gave was about 30 %, and a 6 ms step could not be told from the noise in 8 steps.
import { fileURLToPath } from 'node:url';
import { deviceIdentity } from '@soup/cuda-probe';
import { useTempDir } from '@soup/test-utils';
import { tuneExec } from '@soup/tune';
import { describe, expect, it } from 'vitest';
import { trainerTuneOptions } from './trainer-tune';

const TWIN = fileURLToPath(new URL('../../../examples/known-cost-trainer/train.mjs', import.meta.url));

describe('[slow] --try: throughput not monotone in m (real children)', { timeout: 60_000 }, () => {
  it('walks down from the largest m that fits to the fastest per sample, each move confirmed', async () => {
    const cwd = useTempDir();
    const notes: string[] = [];
    const options = trainerTuneOptions({
      env: { PATH: process.env.PATH, HOME: cwd },
      cwd,
      signal: new AbortController().signal,
      identity: await deviceIdentity({ device: 'cpu' }),
      deviceId: 0,
      budgetBytes: null,
      timeoutMs: 30_000,
      maxLength: 8,
      quantization: 'none',
      loraR: 0,
      command:
        `${JSON.stringify(process.execPath)} ${TWIN} --micro_batch_size {micro_batch_size} --grad_ckpt {grad_ckpt} ` +
        '--max_steps {probe_steps} --per_sample_mib 0 --step_ms 0 --sample_ms 0 --sample_sq_ms 20',
      tries: { grad_ckpt: ['false'] },
      micro: { globalBatchSize: 2, worldSize: 1, headroom: 0 },
      timeSteps: 8,
      start: undefined,
      refresh: true,
      noCache: true,
      cacheExceptionsOnly: true,
      predict: false,
    });
    const { entry } = await tuneExec({
      ...options,
      noCache: true,
      cache: { env: {}, homeDir: cwd, cwd },
      onEvent: (e) => notes.push(e.message),
    });
    const chosen = entry.rows[entry.chosen]!;
    expect(chosen, `${notes.join('\n')}\n${entry.timedBy}`).toMatchObject({ microBatchSize: 1, accumulation: 2 });
    expect(chosen.note).toMatch(/^walked down from micro-batch 2/);
    expect(notes.filter((n) => /is faster than/.test(n))).toEqual([
      expect.stringMatching(/^grad_ckpt=false: micro-batch 1 is faster than 2 \(.*timed again side by side\)/),
    ]);
  });
});
