// `soup run` faults, each on real processes and a directory store: soup SIGKILLed while it pushes, a
// trainer that crashes mid-save, one that ignores SIGTERM, a corrupted newest checkpoint, a failing
// trainer, and a changed fingerprint.
import { makeTempDir, useTempDir } from '@soup/test-utils';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from './exit-codes';
import {
  nodeTrainerArgv,
  pointerOf,
  referenceRun,
  sha256File,
  soupEnv,
  soupRun,
  soupRunUntil,
  storeSteps,
  TINY_SAFETENSORS_JS,
  trainerPid,
} from '../test/run-helpers';

const ARGV = nodeTrainerArgv({ maxSteps: 60, saveSteps: 10 });
const OPTIONS = [
  '--repo',
  'file://store',
  '--output-dir',
  'out',
  '--batch-size',
  '4',
  '--settle',
  '300ms',
  '--poll',
  '100ms',
];
let reference: string;

const refDir = makeTempDir('soup-run-ref-');
beforeAll(async () => {
  reference = await referenceRun(refDir.dir, ARGV, 4);
}, 120_000);
afterAll(() => refDir.cleanup());

describe('[slow] soup run faults', { timeout: 240_000 }, () => {
  it(
    'SIGKILL of soup run while it pushes: the next session resumes from a verified checkpoint and ' +
      'ends bit-identical',
    async () => {
      const cwd = useTempDir('soup-run-kill-');
      // Bigger checkpoints (~10 MB) so the kill lands inside a push.
      const argv = nodeTrainerArgv({ maxSteps: 60, saveSteps: 10, extra: ['--d_model', '128', '--n_layers', '4'] });
      const ref = await referenceRun(useTempDir('soup-run-kill-ref-'), argv, 4);
      const env = soupEnv(cwd, { SOUP_EXAMPLE_STEP_DELAY_MS: '30' });
      const { child, output } = await soupRunUntil(cwd, OPTIONS, argv, env, /pushing ckpt\/checkpoint-20 /);
      // Freeze soup at once, then look at the store: the kill lands mid-push only if checkpoint-10 is the
      // verified pointer and checkpoint-20's push (announced) has not moved it yet.
      child.kill('SIGSTOP');
      const frozen = pointerOf(join(cwd, 'store'));
      child.kill('SIGKILL');
      // The whole session dies with it, as a preempted VM or an ended notebook would.
      try {
        process.kill(-trainerPid(output), 'SIGKILL');
      } catch {
        // already gone
      }
      expect(output).toMatch(/pushed ckpt\/checkpoint-10 \(step 10,/);
      expect(frozen, 'the kill landed after the push of checkpoint-20 had moved the pointer').toMatchObject({
        step: 10,
        path_in_repo: 'ckpt/checkpoint-10',
      });
      expect(pointerOf(join(cwd, 'store'))).toMatchObject({ step: 10 });

      const s2 = await soupRun(cwd, OPTIONS, argv, env);
      expect(s2.code, s2.stderr).toBe(0);
      // Resumed, always: from checkpoint-10, or from checkpoint-20 when its upload had completed and verifies.
      const resumed = /pulled ckpt\/checkpoint-(\d+) \(step \d+, \d+ files, every sha256 checked\)/.exec(s2.stdout);
      expect(resumed, s2.stdout).not.toBeNull();
      expect([10, 20]).toContain(Number(resumed![1]));
      expect(s2.stdout).toMatch(/run complete: pushed final\//);
      expect(sha256File(join(cwd, 'store', 'final', 'model.safetensors'))).toBe(ref);
    },
  );

  it(
    'a trainer that crashes mid-save: the half-written folder is never pushed, its exit code passes ' + 'through',
    async () => {
      const cwd = useTempDir('soup-run-crash-');
      const env = soupEnv(cwd, { SOUP_EXAMPLE_STEP_DELAY_MS: '100', SOUP_EXAMPLE_FAULT: 'crash-mid-save:20' });
      const r = await soupRun(cwd, OPTIONS, ARGV, env);
      expect(r.code).toBe(3);
      expect(r.stderr).toMatch(
        /soup: the trainer failed with exit code 3: RuntimeError: simulated crash while writing .*checkpoint-20\/optimizer\.safetensors; .*no final pushed/,
      );
      // the half-written folder is there…
      expect(existsSync(join(cwd, 'out', 'checkpoint-20', 'model.safetensors'))).toBe(true);
      expect(storeSteps(cwd)).not.toContain(20); // …and never left the machine
      expect(pointerOf(join(cwd, 'store'))?.step ?? 10).toBe(10);

      // The next session (no fault) continues from step 10 and overwrites the broken folder.
      const s2 = await soupRun(cwd, OPTIONS, ARGV, soupEnv(cwd));
      expect(s2.code, s2.stderr).toBe(0);
      expect(sha256File(join(cwd, 'store', 'final', 'model.safetensors'))).toBe(reference);
    },
  );

  it('a trainer that ignores SIGTERM is killed after --grace and the last complete checkpoint is pushed', async () => {
    const cwd = useTempDir('soup-run-grace-');
    const env = soupEnv(cwd, { SOUP_EXAMPLE_STEP_DELAY_MS: '100', SOUP_EXAMPLE_FAULT: 'ignore-sigterm' });
    const r = await soupRun(cwd, [...OPTIONS, '--time-limit', '3s', '--grace', '1s'], ARGV, env);
    expect(r.code, r.stderr).toBe(EXIT_CODES.segmentSaved);
    expect(r.stdout).toContain('trainer: SIGTERM ignored');
    expect(r.stderr).toMatch(/the trainer did not exit within --grace 1\.0s: killed it \(SIGKILL\)/);
    const complete = readdirSync(join(cwd, 'out'))
      .filter((n) => existsSync(join(cwd, 'out', n, 'trainer_state.json')))
      .map((n) => Number(/checkpoint-(\d+)/.exec(n)?.[1]))
      .sort((a, b) => a - b);
    const pointer = pointerOf(join(cwd, 'store'));
    expect(pointer).not.toBeNull();
    // The newest folder with its trainer_state.json, unless it was written within --settle of the kill.
    expect(complete.slice(-2)).toContain(pointer!.step);
    expect(r.stdout).toContain(`step ${pointer!.step} is saved`);
  });

  it('a second signal quits at once: exit 130, the trainer killed with soup', async () => {
    const cwd = useTempDir('soup-run-twice-');
    const env = soupEnv(cwd, { SOUP_EXAMPLE_STEP_DELAY_MS: '100', SOUP_EXAMPLE_FAULT: 'ignore-sigterm' });
    const { child, output, exited } = await soupRunUntil(
      cwd,
      [...OPTIONS, '--grace', '5m'],
      ARGV,
      env,
      /trainer: fresh start/,
    );
    const pid = trainerPid(output);
    child.kill('SIGTERM');
    await new Promise<void>((resolve) => {
      const check = (d: Buffer | string): void => {
        if (String(d).includes('sending SIGTERM to the trainer')) resolve();
      };
      child.stdout?.on('data', check);
    });
    child.kill('SIGTERM');
    const r = await exited;
    expect(r.code).toBe(EXIT_CODES.interrupted);
    const alive = (): boolean => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    for (let i = 0; i < 50 && alive(); i++) await new Promise((res) => setTimeout(res, 100));
    expect(alive()).toBe(false);
  });

  it(
    'a corrupted newest checkpoint: the next session falls back to an older one, says which, and ends ' +
      'bit-identical',
    async () => {
      const cwd = useTempDir('soup-run-corrupt-');
      const env = soupEnv(cwd, { SOUP_EXAMPLE_STEP_DELAY_MS: '100' });
      const s1 = await soupRun(cwd, [...OPTIONS, '--time-limit', '4s'], ARGV, env);
      expect(s1.code, s1.stderr).toBe(EXIT_CODES.segmentSaved);
      const steps = storeSteps(cwd);
      expect(steps.length, `${s1.stdout}\n${s1.stderr}`).toBeGreaterThanOrEqual(2);
      const newest = steps.at(-1)!;
      const older = steps.at(-2)!;
      const model = join(cwd, 'store', 'ckpt', `checkpoint-${newest}`, 'model.safetensors');
      const bytes = readFileSync(model);
      bytes[bytes.length >> 1] = (bytes[bytes.length >> 1] ?? 0) ^ 0xff; // same size, one flipped byte
      writeFileSync(model, bytes);

      const s2 = await soupRun(cwd, OPTIONS, ARGV, soupEnv(cwd));
      expect(s2.code, s2.stderr).toBe(0);
      expect(s2.stderr).toContain(`falling back to ckpt/checkpoint-${older} (step ${older})`);
      expect(s2.stderr).toContain(`ckpt/checkpoint-${newest} (step ${newest}) does not verify or pull cleanly`);
      expect(s2.stdout).toContain(`trainer: resumed from ${join(cwd, 'out', `checkpoint-${older}`)} at step ${older}`);
      expect(sha256File(join(cwd, 'store', 'final', 'model.safetensors'))).toBe(reference);
    },
  );

  it('a trainer that exits non-zero: its code and error pass through, and no final is pushed', async () => {
    const cwd = useTempDir('soup-run-fail-');
    const env = soupEnv(cwd, { SOUP_EXAMPLE_STEP_DELAY_MS: '20', SOUP_EXAMPLE_FAULT: 'exit:25:7' });
    const r = await soupRun(cwd, [...OPTIONS, '--json'], ARGV, env);
    expect(r.code).toBe(7);
    expect(r.stderr).toMatch(
      /soup: the trainer failed with exit code 7: ValueError: simulated failure at step 25; .*no final pushed/,
    );
    expect(JSON.parse(r.stdout)).toMatchObject({
      ok: false,
      status: 'failed',
      exit_code: 7,
      trainer: { exit_code: 7, error: 'ValueError: simulated failure at step 25' },
    });
    expect(existsSync(join(cwd, 'store', 'final'))).toBe(false);
    expect(pointerOf(join(cwd, 'store'))?.terminal ?? false).toBe(false);
    expect(Math.max(-1, ...storeSteps(cwd))).toBeLessThanOrEqual(20);
  });

  it(
    'a trainer signalled from outside (SLURM signals the whole job) counts as the session ending, not ' + 'a failure',
    async () => {
      const cwd = useTempDir('soup-run-outside-');
      const script = [
        "const fs = require('node:fs'), path = require('node:path');",
        "const dir = path.join(process.env.SOUP_OUTPUT_DIR, 'checkpoint-5');",
        "fs.mkdirSync(dir, { recursive: true }); fs.writeFileSync(path.join(dir, 'model.bin'), 'weights'); " +
          "fs.writeFileSync(path.join(dir, 'trainer_state.json'), '{\"global_step\":5}');",
        "setTimeout(() => process.kill(process.pid, 'SIGTERM'), 1500);",
      ].join('\n');
      const r = await soupRun(
        cwd,
        ['--repo', 'file://store', '--output-dir', 'out', '--settle', '200ms', '--poll', '100ms'],
        [process.execPath, '-e', script],
        soupEnv(cwd),
      );
      expect(r.code, r.stderr).toBe(EXIT_CODES.segmentSaved);
      expect(r.stdout).toContain('segment saved (the trainer got SIGTERM from outside): step 5 is saved');
      expect(pointerOf(join(cwd, 'store'))).toMatchObject({ step: 5, terminal: false });
    },
  );

  it(
    'a store whose run never pushed a checkpoint is taken over by a changed command (nothing to ' + 'protect)',
    async () => {
      const cwd = useTempDir('soup-run-typo-');
      const opts = ['--repo', 'file://store', '--output-dir', 'out'];
      const typo = await soupRun(
        cwd,
        opts,
        [process.execPath, '-e', "console.error('SyntaxError: typo'); process.exit(2)"],
        soupEnv(cwd),
      );
      expect(typo.code).toBe(2);
      expect(typo.stderr).toContain(
        'the trainer failed with exit code 2: SyntaxError: typo; no checkpoint was pushed; no final pushed',
      );
      const fixed = await soupRun(
        cwd,
        opts,
        [
          process.execPath,
          '-e',
          "const fs = require('node:fs'); fs.mkdirSync(process.env.SOUP_OUTPUT_DIR, { recursive: true }); " +
            `fs.writeFileSync(process.env.SOUP_OUTPUT_DIR + '/model.bin', ${TINY_SAFETENSORS_JS})`,
        ],
        soupEnv(cwd),
      );
      expect(fixed.code, fixed.stderr).toBe(0);
      expect(fixed.stdout).toMatch(
        /holds no checkpoint of run soup-run-[0-9a-f]{20} \(trainer command differs at argument 3: .*\): starting run soup-run-[0-9a-f]{20} there/,
      );
      expect(fixed.stdout).toContain('run complete: pushed final/ (1 file from out, step 0, verified)');
    },
  );

  it('a changed --fingerprint file is refused naming it; --resume force continues and says so', async () => {
    const cwd = useTempDir('soup-run-stale-');
    writeFileSync(join(cwd, 'config.json'), '{"lr": 0.003}\n');
    const env = soupEnv(cwd, { SOUP_EXAMPLE_STEP_DELAY_MS: '100' });
    const opts = [...OPTIONS, '--fingerprint', 'config.json'];
    const s1 = await soupRun(cwd, [...opts, '--time-limit', '3s'], ARGV, env);
    expect(s1.code, s1.stderr).toBe(EXIT_CODES.segmentSaved);

    writeFileSync(join(cwd, 'config.json'), '{"lr": 0.001}\n');
    const s2 = await soupRun(cwd, opts, ARGV, env);
    expect(s2.code).toBe(EXIT_CODES.resume);
    expect(s2.stderr).toMatch(
      /^soup: resume refused as stale: directory store holds run soup-run-[0-9a-f]{20}, not this command's soup-run-[0-9a-f]{20}: --fingerprint config\.json changed \(sha256 [0-9a-f]{12}… → [0-9a-f]{12}…\)\. .*--resume force/m,
    );
    expect(s2.stdout).not.toContain('launched trainer');

    const argv2 = ARGV.map((a) => (a === '60' ? '61' : a));
    writeFileSync(join(cwd, 'config.json'), '{"lr": 0.003}\n');
    const s3 = await soupRun(cwd, opts, argv2, env);
    expect(s3.code).toBe(EXIT_CODES.resume);
    expect(s3.stderr).toContain('trainer command differs at argument 8: "60" → "61"');

    writeFileSync(join(cwd, 'config.json'), '{"lr": 0.001}\n');
    const s4 = await soupRun(cwd, [...opts, '--resume', 'force', '--time-limit', '2s'], ARGV, env);
    expect(s4.code, s4.stderr).toBe(EXIT_CODES.segmentSaved);
    expect(s4.stderr).toMatch(
      /warning: --resume force: continuing run soup-run-[0-9a-f]{20} although --fingerprint config\.json changed/,
    );
    expect(s4.stdout).toContain('launched trainer');
  });
});
