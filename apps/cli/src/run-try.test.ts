// soup run --try: each session picks the trainer's own lever and the micro-batch that train fastest
// at G (the same tuner as soup probe --exec --try, timed on the --probe command), fills {NAME} in
// the trainer command, records the choice per session, and the next session reuses it from the
// tune cache. The probe is the known-cost twin (checkpointing halves memory, adds 30 % time); the
// trainer is the Node example trainer, which takes HF Trainer's --gradient_checkpointing.
import { runProcess, useTempDir } from '@soup/test-utils';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { EXIT_CODES } from './exit-codes';
import { NODE_TRAINER, readJson, runJsonOf, soupEnv, soupRun } from '../test/run-helpers';

const TWIN = fileURLToPath(new URL('../../../examples/known-cost-trainer/train.mjs', import.meta.url));
const MiB = 2 ** 20;

const trainerArgv = [
  process.execPath,
  NODE_TRAINER,
  '--gradient_checkpointing',
  '{grad_ckpt}',
  '--per_device_train_batch_size',
  '{micro_batch_size}',
  '--gradient_accumulation_steps',
  '{grad_accum}',
  '--max_steps',
  '6',
  '--save_steps',
  '3',
  '--output_dir',
  '{output_dir}',
  '--resume_from_checkpoint',
  '{resume_from}',
];

async function options(): Promise<string[]> {
  // The twin's peak holding nothing (a bare node), plus 384 MiB: no checkpointing fits 4 (256 MiB), checkpointing 8.
  const r = await runProcess(process.execPath, ['-e', 'console.log(process.memoryUsage().rss)'], { timeoutMs: 60_000 });
  const budget = Math.round(Number(r.stdout.trim()) + 384 * MiB);
  const probe =
    `${process.execPath} ${TWIN} --micro_batch_size {micro_batch_size} --grad_ckpt {grad_ckpt} ` +
    `--max_steps {probe_steps} --per_sample_mib 64 --step_ms 0`;
  return [
    '--repo',
    'file://store',
    '--output-dir',
    'out',
    '--global-batch-size',
    '32',
    '--budget',
    `${budget}B`,
    '--probe',
    probe,
    '--try',
    'grad_ckpt=false,true',
    '--time-steps',
    '16',
    '--settle',
    '500ms',
    '--poll',
    '200ms',
  ];
}

interface Session {
  micro_batch_size: number;
  grad_accum: number;
  source: string;
  levers?: Record<string, string>;
}

describe('[slow] soup run --try', { timeout: 600_000 }, () => {
  it(
    'session 1 measures (no checkpointing, 4 × 8) and fills {grad_ckpt}; session 2 reuses the choice ' +
      'from the tune cache',
    async () => {
      const cwd = useTempDir('soup-run-try-');
      const opts = await options();
      // Session 1 ends at step 3 (the trainer's own SIGTERM: it saves and exits 0 before its horizon).
      const one = await soupRun(cwd, opts, trainerArgv, soupEnv(cwd, { SOUP_EXAMPLE_FAULT: 'stop-at:3' }), 400_000);
      expect(one.code, one.stderr).toBe(EXIT_CODES.segmentSaved);
      expect(one.stdout).toMatch(/choice: grad_ckpt=false, micro-batch 4 × 8 = 32/);
      expect(one.stdout).toContain('micro 4 × 8 = 32 (tune), grad_ckpt=false');
      expect(one.stdout).toContain('gradient_checkpointing false'); // the trainer's own line: {grad_ckpt} reached it
      const two = await soupRun(cwd, opts, trainerArgv, soupEnv(cwd), 400_000);
      expect(two.code, two.stderr).toBe(0);
      expect(two.stdout).toMatch(/from the tune cache/);
      expect(two.stdout).toContain('micro 4 × 8 = 32 (tune-cache), grad_ckpt=false');
      expect(runJsonOf<{ status: string; micro_batch: string }>(two.stdout)).toMatchObject({
        status: 'finished',
        micro_batch: '4 × 8 = 32',
      });
      const record = readJson<{ sessions: Session[] }>(join(cwd, 'store', 'soup_run.json'));
      expect(record.sessions.map((s) => [s.micro_batch_size, s.grad_accum, s.source, s.levers])).toEqual([
        [4, 8, 'tune', { grad_ckpt: 'false' }],
        [4, 8, 'tune-cache', { grad_ckpt: 'false' }],
      ]);
    },
  );

  it('refuses a lever the trainer command does not take, and --try without a timed --probe', async () => {
    const cwd = useTempDir('soup-run-try-');
    const opts = await options();
    const noLever = trainerArgv.map((a) => (a === '{grad_ckpt}' ? 'false' : a));
    const a = await soupRun(cwd, opts, noLever, soupEnv(cwd));
    expect(a.code).toBe(2);
    expect(a.stderr).toMatch(/--try grad_ckpt: the trainer command has no \{grad_ckpt\}/);
    const untimed = opts.map((x) => x.replace('{probe_steps}', '1'));
    const b = await soupRun(cwd, untimed, trainerArgv, soupEnv(cwd));
    expect(b.code).toBe(2);
    expect(b.stderr).toMatch(/put \{probe_steps\} in the --probe command/);
  });
});
