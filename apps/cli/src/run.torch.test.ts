// `soup run` supervising a real PyTorch trainer (examples/torch-trainer/train.py) over two sessions on
// a directory store. Runs wherever `$PYTHON -c "import torch"` works (default /usr/bin/python3; Debian:
// apt-get install -y python3-torch); elsewhere it is skipped with the reason printed. The Node twin
// (run.e2e.test.ts) always runs.
import { useTempDir } from '@soup/test-utils';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT_CODES } from './exit-codes';
import {
  pointerOf,
  PYTHON,
  referenceRun,
  sha256File,
  soupEnv,
  soupRun,
  TORCH_TRAINER,
  torchMissing,
} from '../test/run-helpers';

const missing = await torchMissing();
if (missing)
  process.stdout.write(
    `run.torch.test.ts: skipped: ${missing} (Debian: apt-get install -y python3-torch, or set PYTHON)\n`,
  );

describe.skipIf(missing !== null)(
  '[slow] soup run with a PyTorch trainer (two sessions, directory store)',
  { timeout: 300_000 },
  () => {
    it(
      'ends session 1 at --time-limit, resumes on an empty disk, finishes bit-identical, then says ' + 'complete',
      async () => {
        const cwd = useTempDir('soup-run-torch-');
        const argv = [
          PYTHON,
          TORCH_TRAINER,
          '--output_dir',
          '{output_dir}',
          '--per_device_train_batch_size',
          '{batch_size}',
          '--max_steps',
          '120',
          '--save_steps',
          '10',
          '--resume_from_checkpoint',
          '{resume_from}',
        ];
        // Unset for the peer only, as the benches do (OpenBLAS hints from the environment).
        const base = { ...process.env, OPENBLAS_CORETYPE: undefined, OPENBLAS_L2_SIZE: undefined };
        const ref = await referenceRun(cwd, argv, 8, base);
        const env = soupEnv(cwd, { SOUP_EXAMPLE_STEP_DELAY_MS: '80' });
        const options = [
          '--repo',
          'file://store',
          '--output-dir',
          'out',
          '--batch-size',
          '8',
          '--settle',
          '500ms',
          '--poll',
          '200ms',
        ];

        const s1 = await soupRun(cwd, [...options, '--time-limit', '7s'], argv, env);
        expect(s1.code, s1.stderr).toBe(EXIT_CODES.segmentSaved);
        const saved = Number(/segment saved \(time limit 7\.0s\): step (\d+) is saved/.exec(s1.stdout)?.[1]);
        expect(saved).toBeGreaterThan(0);
        expect(saved).toBeLessThan(120);
        expect(pointerOf(join(cwd, 'store'))).toMatchObject({
          step: saved,
          path_in_repo: `ckpt/checkpoint-${saved}`,
          terminal: false,
        });

        rmSync(join(cwd, 'out'), { recursive: true, force: true });
        const s2 = await soupRun(cwd, options, argv, env);
        expect(s2.code, s2.stderr).toBe(0);
        expect(s2.stdout).toContain(
          `trainer: resumed from ${join(cwd, 'out', `checkpoint-${saved}`)} at step ${saved}`,
        );
        expect(s2.stdout).toMatch(/run complete: pushed final\/ .*step 120, verified\) with a terminal pointer/);
        expect(sha256File(join(cwd, 'store', 'final', 'model.safetensors'))).toBe(ref);

        const s3 = await soupRun(cwd, options, argv, env);
        expect(s3.code, s3.stderr).toBe(0);
        expect(s3.stdout).toMatch(/is complete: .*final\/ holds step 120; nothing to launch/);
        expect(s3.stdout).not.toContain('launched trainer');
      },
    );

    it(
      'an exit 0 before the horizon (SIGTERM from a scheduler, saved by the trainer) is a segment: ' +
        'exit 75, no final/',
      async () => {
        const cwd = useTempDir('soup-run-torch-early-');
        const argv = [
          PYTHON,
          TORCH_TRAINER,
          '--output_dir',
          '{output_dir}',
          '--per_device_train_batch_size',
          '8',
          '--max_steps',
          '60',
          '--save_steps',
          '10',
          '--resume_from_checkpoint',
          '{resume_from}',
        ];
        const env = {
          ...soupEnv(cwd, { SOUP_EXAMPLE_FAULT: 'stop-at:17' }),
          OPENBLAS_CORETYPE: undefined,
          OPENBLAS_L2_SIZE: undefined,
        };
        const r = await soupRun(
          cwd,
          ['--repo', 'file://store', '--output-dir', 'out', '--settle', '500ms', '--poll', '200ms'],
          argv,
          env,
        );
        expect(r.code, r.stderr).toBe(EXIT_CODES.segmentSaved);
        expect(r.stderr).toContain('the trainer exited 0 at step 17, before its horizon of 60 steps');
        expect(pointerOf(join(cwd, 'store'))).toMatchObject({ step: 17, terminal: false });
      },
    );
  },
);
