// `soup run`'s verdicts "complete" and "this run's" (issue 44, items 5 and 8) through the real bin on a directory
// store, each case with a real trainer: the Node twin always, the PyTorch twin where `$PYTHON -c "import torch"`
// works (skipped with the reason printed elsewhere).
import { runProcess, useTempDir } from '@soup/test-utils';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT_CODES } from './exit-codes';
import {
  nodeTrainerArgv,
  pointerOf,
  sha256File,
  soupEnv,
  soupRun,
  torchTrainerArgv,
  torchMissing,
} from '../test/run-helpers';

const OPTIONS = ['--repo', 'file://store', '--output-dir', 'out', '--batch-size', '4', '--settle', '300ms'];

const torchArgv = torchTrainerArgv;

type Argv = typeof nodeTrainerArgv;
const missing = await torchMissing();
if (missing) process.stdout.write(`run.verdicts.test.ts: PyTorch twins skipped: ${missing}\n`);
const twins: Array<[string, Argv, boolean]> = [
  ['Node', nodeTrainerArgv, false],
  ['PyTorch', torchArgv, missing !== null],
];

/** Every file under `dir` (relative paths), or [] when it is missing. */
const filesUnder = (dir: string): string[] =>
  existsSync(dir)
    ? readdirSync(dir, { recursive: true, withFileTypes: true })
        .filter((e) => e.isFile())
        .map((e) => join(e.parentPath, e.name))
    : [];

/** What the run printed, shown when an assertion fails. */
const said = (r: { stdout: string; stderr: string }): string => `${r.stdout.slice(-3000)}\n${r.stderr.slice(-3000)}`;

describe.each(twins)('[slow] soup run verdicts, %s trainer', { timeout: 120_000 }, (_name, argvOf, skip) => {
  it.skipIf(skip)(
    "an earlier run's top-level files (seed 7) do not make an exit 0 at step 12 of 20 complete: exit 75, no final/",
    async () => {
      const cwd = useTempDir('soup-verdict-leftover-');
      // The earlier run: a whole run into out/, then its checkpoint folders removed.
      const earlier = argvOf({ maxSteps: 20, saveSteps: 0, extra: ['--seed', '7'] })
        .map((a) => a.replace('{output_dir}', join(cwd, 'out')).replace('{batch_size}', '4'))
        .filter((a, i, all) => a !== '{resume_from}' && all[i + 1] !== '{resume_from}');
      const e = await runProcess(earlier[0]!, earlier.slice(1), { cwd, timeoutMs: 60_000 });
      expect(e.code, e.stderr).toBe(0);
      for (const n of readdirSync(join(cwd, 'out'))) {
        if (n.startsWith('checkpoint-')) rmSync(join(cwd, 'out', n), { recursive: true });
      }
      const seed7 = sha256File(join(cwd, 'out', 'model.safetensors'));
      const r = await soupRun(
        cwd,
        OPTIONS,
        argvOf({ maxSteps: 20, saveSteps: 4 }),
        soupEnv(cwd, { SOUP_EXAMPLE_FAULT: 'exit:12:0' }),
      );
      expect(r.code, said(r)).toBe(EXIT_CODES.segmentSaved);
      expect(r.stderr).toContain('before its horizon of 20 steps');
      expect(r.stdout).not.toContain('run complete');
      expect(pointerOf(join(cwd, 'store'))).toMatchObject({ step: 8, terminal: false });
      expect(existsSync(join(cwd, 'store', 'final'))).toBe(false);
      expect(filesUnder(join(cwd, 'store')).filter((f) => sha256File(f) === seed7)).toEqual([]);
    },
  );

  it.skipIf(skip)(
    'every push refused (a dangling link in each checkpoint): not complete, exit 2 naming the link, no final/',
    async () => {
      const cwd = useTempDir('soup-verdict-refused-');
      const r = await soupRun(
        cwd,
        OPTIONS,
        argvOf({ maxSteps: 8, saveSteps: 4 }),
        soupEnv(cwd, { SOUP_EXAMPLE_FAULT: 'link-in-save' }),
      );
      expect(r.code, said(r)).toBe(EXIT_CODES.usage);
      expect(r.stderr).toContain('gone.bin -> nowhere.bin');
      expect(r.stderr).toContain('not complete');
      expect(r.stdout).not.toContain('run complete');
      expect(pointerOf(join(cwd, 'store'))).toBeNull();
      expect(existsSync(join(cwd, 'store', 'final'))).toBe(false);
    },
  );

  it.skipIf(skip)(
    'a trainer that stops early by design (should_training_stop at step 6 of 20) is complete: exit 0, final/',
    async () => {
      const cwd = useTempDir('soup-verdict-early-');
      const r = await soupRun(
        cwd,
        OPTIONS,
        argvOf({ maxSteps: 20, saveSteps: 4 }),
        soupEnv(cwd, { SOUP_EXAMPLE_FAULT: 'early-stop:6' }),
      );
      expect(r.code, said(r)).toBe(0);
      expect(r.stdout).toContain('run complete');
      expect(pointerOf(join(cwd, 'store'))).toMatchObject({ step: 6, terminal: true });
      expect(sha256File(join(cwd, 'store', 'final', 'model.safetensors'))).toBe(
        sha256File(join(cwd, 'out', 'model.safetensors')),
      );
    },
  );
});

describe('[slow] soup run verdicts, done marker', { timeout: 120_000 }, () => {
  it("the trainer's own soup_done marker at step 5 of 8 is complete: exit 0, final/, terminal pointer", async () => {
    const cwd = useTempDir('soup-verdict-done-');
    const r = await soupRun(
      cwd,
      OPTIONS,
      nodeTrainerArgv({ maxSteps: 8, saveSteps: 4 }),
      soupEnv(cwd, { SOUP_EXAMPLE_FAULT: 'done-marker:5' }),
    );
    expect(r.code, said(r)).toBe(0);
    expect(r.stdout).toContain('run complete');
    expect(pointerOf(join(cwd, 'store'))).toMatchObject({ step: 5, terminal: true });
  });
});
