// [slow: each case runs a trainer three times, one of them as 2 ranks killed mid-run] The example trainers' data
// parallel mode (torchrun's environment, started by examples/launch-ranks.mjs): 2 ranks × m 1 × a 1 train what one
// process × m 1 × a 2 trains (the Node twin bit for bit, the PyTorch twin in float64 within 1e-6); a SIGTERM on rank
// 1 alone stops both ranks after the same step, rank 0 alone saves it; one process (a 2) resumes from it and ends on
// the uninterrupted run's weights. The PyTorch twin is skipped with the reason printed where torch is missing.
import { useTempDir } from '@soup/test-utils';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { launchRanks, maxRelDiff } from '../test/rank-helpers';
import { NODE_TRAINER, PYTHON, referenceOutput, sha256File, TORCH_TRAINER, torchMissing } from '../test/run-helpers';

const missing = await torchMissing();
if (missing) process.stdout.write(`trainers.data-parallel.test.ts: PyTorch twin skipped: ${missing}\n`);

const STEPS = 5;
const SMALL = ['--max_steps', String(STEPS), '--save_steps', '1', '--d_model', '16', '--n_layers', '1'];

/** The trainer's argv for m 1 × a `accum` into {output_dir}, resuming from {resume_from} when given. */
type Argv = (accum: number) => string[];

async function twoRanksThenOne(cwd: string, argvOf: Argv, same: (a: string, b: string) => void): Promise<void> {
  // The uninterrupted reference: one process, G = 2 as m 1 × a 2, a checkpoint every step.
  const ref = await referenceOutput(cwd, argvOf(2), { '{batch_size}': '1' }, process.env, 'ref');
  const dp = join(cwd, 'dp');
  const argv = argvOf(1).map((a) => (a === '{output_dir}' ? dp : a === '{batch_size}' ? '1' : a));
  const env = { ...process.env, SOUP_EXAMPLE_STEP_DELAY_MS: '300' };
  const ranks = await launchRanks({ ranks: 2, argv: dropResume(argv), env, marker: /step 2 loss/ });
  expect(ranks.pids).toHaveLength(2);
  process.kill(ranks.pids[1]!, 'SIGTERM'); // rank 1 only
  const r = await ranks.exited;
  expect(r.code, r.stderr).toBe(0);
  const stopped = [...r.stdout.matchAll(/trainer: stopped at step (\d+)/g)].map((m) => Number(m[1]));
  expect(stopped).toHaveLength(2);
  expect(stopped[0]).toBe(stopped[1]);
  const S = stopped[0]!;
  expect(S).toBeGreaterThanOrEqual(2);
  expect(S).toBeLessThan(STEPS);
  // One writer: S checkpoints saved once each, by rank 0.
  expect([...r.stdout.matchAll(/trainer: saved /g)]).toHaveLength(S);
  same(join(dp, `checkpoint-${S}`, 'model.safetensors'), join(ref, `checkpoint-${S}`, 'model.safetensors'));
  // A later session on one process: same G, a 2.
  const resumed = await referenceOutput(
    cwd,
    argvOf(2).map((a) => (a === '{resume_from}' ? join(dp, `checkpoint-${S}`) : a)),
    { '{batch_size}': '1' },
    process.env,
    'resumed',
  );
  expect(existsSync(join(resumed, `checkpoint-${S}`))).toBe(false);
  same(join(resumed, 'model.safetensors'), join(ref, 'model.safetensors'));
}

function dropResume(argv: string[]): string[] {
  return argv.filter((a, i, all) => a !== '{resume_from}' && all[i + 1] !== '{resume_from}');
}

const common = (accum: number): string[] => [
  '--output_dir',
  '{output_dir}',
  '--per_device_train_batch_size',
  '{batch_size}',
  '--gradient_accumulation_steps',
  String(accum),
  ...SMALL,
  '--resume_from_checkpoint',
  '{resume_from}',
];

describe('[slow] data parallel example trainers', { timeout: 120_000 }, () => {
  it('Node twin: 2 ranks match one process bit for bit; a SIGTERM on rank 1 stops both at one step', async () => {
    const cwd = useTempDir('soup-dp-node-');
    await twoRanksThenOne(
      cwd,
      (a) => [process.execPath, NODE_TRAINER, ...common(a), '--seq_len', '16'],
      (a, b) => expect(sha256File(a), `${a} vs ${b}`).toBe(sha256File(b)),
    );
  });

  it.skipIf(missing !== null)('PyTorch twin (gloo): the same within 1e-6 relative (float64)', async () => {
    const cwd = useTempDir('soup-dp-torch-');
    await twoRanksThenOne(
      cwd,
      (a) => [PYTHON, TORCH_TRAINER, ...common(a), '--seq_len', '16', '--dtype', 'float64'],
      (a, b) => expect(maxRelDiff(a, b), `${a} vs ${b}`).toBeLessThan(1e-6),
    );
  });
});
