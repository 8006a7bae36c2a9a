// A rotating trainer (--save_total_limit 1: the older checkpoint is deleted as soon as a newer one is written) that
// saves faster than a push: pushes still land while it trains, and after a SIGKILL of the session and its trainer
// (a preempted VM) the next session resumes from a pushed checkpoint. The Node trainer always; the PyTorch twin
// where `$PYTHON -c "import torch"` works (default /usr/bin/python3), else skipped with the reason printed. The
// PyTorch twin takes ~15 s on a loaded machine: two sessions each start Python and import torch (seconds each), and
// only a real torch trainer shows rotation by shutil.rmtree of the files torch.save wrote.
import { processTree, runNode, spawnUntil, useTempDir, PYTHON, torchMissing } from '@soup/test-utils';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SESSION = fileURLToPath(new URL('../test/slow-store-session.mjs', import.meta.url));
const NODE_TRAINER = fileURLToPath(new URL('../../../examples/node-trainer/train.mjs', import.meta.url));
const TORCH_TRAINER = fileURLToPath(new URL('../../../examples/torch-trainer/train.py', import.meta.url));
const noTorch = torchMissing();
if (noTorch) process.stdout.write(`rotation.test.ts: PyTorch twin skipped: ${noTorch} (or set PYTHON)\n`);

const TRAINER_FLAGS = ['--output_dir', '{output_dir}', '--per_device_train_batch_size', '4', '--max_steps', '16'];
const ROTATING = [...TRAINER_FLAGS, '--save_steps', '2', '--save_total_limit', '1', '--resume_from_checkpoint'];
const TRAINERS = [
  { name: 'Node', argv: [process.execPath, NODE_TRAINER, ...ROTATING, '{resume_from}'], skip: null },
  { name: 'PyTorch', argv: [PYTHON, TORCH_TRAINER, ...ROTATING, '{resume_from}'], skip: noTorch },
];

const newestOnDisk = (out: string): number =>
  Math.max(
    -1,
    ...(existsSync(out) ? readdirSync(out) : []).map((n) => Number(/^checkpoint-(\d+)$/.exec(n)?.[1] ?? -1)),
  );

describe('[slow] a rotating trainer that saves faster than a push', { timeout: 60_000 }, () => {
  for (const t of TRAINERS) {
    it.skipIf(t.skip !== null)(
      `${t.name}: a push lands while it trains; after kill -9 of soup and trainer past the third save, the next ` +
        'session resumes from a pushed checkpoint',
      async () => {
        const cwd = useTempDir('soup-rotation-');
        const out = join(cwd, 'out');
        const cfg = { argv: t.argv, outputDir: out, cwd, store: join(cwd, 'store'), settleMs: 200 };
        // Each upload takes 1.5 s more; the trainer saves every ~0.6 s and deletes the older folder at once.
        const env = { ...process.env, SOUP_EXAMPLE_STEP_DELAY_MS: '300' };
        const a = await spawnUntil(
          process.execPath,
          [SESSION, JSON.stringify({ ...cfg, uploadDelayMs: 1500 })],
          /^pushed ckpt\/checkpoint-\d+/m,
          { cwd, env, timeoutMs: 30_000 },
        );
        for (let i = 0; i < 400 && newestOnDisk(out) < 6; i++) await new Promise((r) => setTimeout(r, 25));
        const tree = processTree(a.child.pid ?? 0);
        // Still training when the push landed and at the kill: the session, and its trainer below it.
        expect(tree.length, 'the session and its trainer').toBeGreaterThanOrEqual(2);
        expect(newestOnDisk(out), 'the third save (step 6) or later').toBeGreaterThanOrEqual(6);
        for (const pid of tree) process.kill(pid, 'SIGKILL');
        const killed = await a.exited;
        expect(killed.stdout).not.toContain('RESULT');
        const pointer = JSON.parse(readFileSync(join(cwd, 'store', 'latest.json'), 'utf8')) as { step: number };
        expect(pointer.step).toBeGreaterThanOrEqual(2);

        const b = await runNode([SESSION, JSON.stringify({ ...cfg, uploadDelayMs: 0 })], {
          cwd,
          env: { ...env, SOUP_EXAMPLE_STEP_DELAY_MS: '0' },
          timeoutMs: 40_000,
        });
        expect(b.code, b.stderr).toBe(0);
        expect(b.stdout).toMatch(
          new RegExp(`trainer: resumed from \\S*checkpoint-${pointer.step} at step ${pointer.step}`),
        );
        const result = JSON.parse(/^RESULT (.*)$/m.exec(b.stdout)?.[1] ?? '{}') as Record<string, unknown>;
        expect(result).toMatchObject({ outcome: 'complete', startStep: pointer.step });
        // A clean end leaves no snapshot behind.
        expect(existsSync(join(out, '.soup-snapshots'))).toBe(false);
      },
    );
  }
});
