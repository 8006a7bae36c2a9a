// soup run over --max-memory mid-run: step 10 of this trainer holds 40 MiB per sample of its micro-batch in a worker
// (a data-dependent peak: SOUP_EXAMPLE_STEP_MEMORY), which its one-step probe never reaches. At m = 16 the tree passes
// --max-memory 600 MiB there (about 780 MiB); at m = 8 it stays under (about 460). The session stops the trainer at
// its first sample over the limit and steps the micro-batch down (16 × 1 → 8 × 2) from checkpoint-8; the resumed
// session runs step 10 again at m = 8 and finishes. With no step-down left it only warns (run.peak.test).
import { useTempDir } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import { NODE_TRAINER, runJsonOf, soupEnv, soupRun } from '../test/run-helpers';

describe('[slow] soup run: over --max-memory mid-run', { timeout: 120_000 }, () => {
  it('steps the micro-batch down at the first sample over the limit, and the smaller one finishes', async () => {
    const cwd = useTempDir('soup-run-overmax-');
    const cmd = [process.execPath, NODE_TRAINER];
    const argv = [
      ...cmd,
      ...['--output_dir', '{output_dir}', '--per_device_train_batch_size', '{micro_batch_size}'],
      ...['--gradient_accumulation_steps', '{grad_accum}', '--max_steps', '12', '--save_steps', '4'],
      ...['--resume_from_checkpoint', '{resume_from}'],
    ];
    const probe = [...cmd, '--output_dir', 'probe-out', '--per_device_train_batch_size', '{micro_batch_size}']
      .concat(['--max_steps', '1', '--save_steps', '0'])
      .join(' ');
    const r = await soupRun(
      cwd,
      ['--repo', 'file://store', '--global-batch-size', '16', '--budget', '6GiB', '--max-memory', '600MiB'].concat([
        '--settle',
        '500ms',
        '--probe',
        probe,
      ]),
      argv,
      soupEnv(cwd, { SOUP_EXAMPLE_STEP_MEMORY: '10:40' }),
    );
    expect(r.code, r.stderr).toBe(0);
    const out = runJsonOf<{
      status: string;
      oom_step_downs: { step: number; from: number; to: number; error: string }[];
    }>(r.stdout);
    expect(out.status).toBe('finished');
    expect(out.oom_step_downs).toMatchObject([
      { from: 16, to: 8, error: expect.stringMatching(/passed --max-memory 600 MiB at step 10\b/) },
    ]);
    expect(r.stdout).toMatch(/trainer: step 10 holds 640 MiB/);
    expect(r.stdout).toMatch(/trainer: step 10 holds 320 MiB/);
    expect(r.stdout + r.stderr).toMatch(/resuming from .*checkpoint-8 \(step 8\) with micro 8 × 2 = 16/);
  });
});
