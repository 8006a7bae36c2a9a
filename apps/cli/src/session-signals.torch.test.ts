// The PyTorch twins of session-signals.e2e.test.ts: `soup run` around examples/torch-trainer/train.py, which saves on
// SIGTERM and, like any Python process, dies of SIGUSR1 and SIGHUP. Runs wherever `$PYTHON -c "import torch"` works
// (default /usr/bin/python3); elsewhere skipped with the reason printed. The Node twins always run.
import { useTempDir } from '@soup/test-utils';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT_CODES } from './exit-codes';
import { pointerOf, runJsonOf, soupEnv, torchMissing, torchTrainerArgv, trainerPid } from '../test/run-helpers';
import { newestCompleteOnDisk, running, signalGroup, soupInGroup } from '../test/signal-helpers';

const missing = await torchMissing();
if (missing) process.stdout.write(`session-signals.torch.test.ts: skipped: ${missing} (or set PYTHON)\n`);

const OPTIONS = ['--repo', 'file://store', '--output-dir', 'out', '--batch-size', '8', '--settle', '300ms'];
const torchArgv = (maxSteps: number): string[] => torchTrainerArgv({ maxSteps, saveSteps: 5 });
const HELD = 'the trainer exited, but what it started still held its output after 1\\.0s: ';
const slowEnv = (cwd: string): NodeJS.ProcessEnv => soupEnv(cwd, { SOUP_EXAMPLE_STEP_DELAY_MS: '40' });

describe.skipIf(missing !== null)(
  '[slow] session ends by signal (soup run, PyTorch trainer)',
  { timeout: 60_000 },
  () => {
    const SLURM =
      'SIGUSR1 to every process of the job (SLURM --signal=USR1@90, no B:): the trainer dies of it, and that is a ' +
      'session end (75) with the newest complete checkpoint pushed';
    it(SLURM, async () => {
      const cwd = useTempDir('soup-torch-usr1-');
      const s = soupInGroup(
        ['run', ...OPTIONS, '--poll', '100ms', '--grace', '10s', '--', ...torchArgv(400)],
        cwd,
        slowEnv(cwd),
      );
      await s.waitFor('stdout', /pushed ckpt\/checkpoint-\d+ /);
      const trainer = trainerPid(s.out.stdout);
      // The trainer's first: its SIGUSR1 is pending before soup can react and send SIGTERM (which it would save on).
      for (const g of [trainer, s.pid]) signalGroup(g, 'SIGUSR1');
      const r = await s.exited;
      // Killed by the signal (no exit code), not stopped by soup's SIGTERM (which it answers by saving and exiting 0).
      expect(runJsonOf(r.stdout)).toMatchObject({ status: 'segment', trainer: { exit_code: null, killed: false } });
      expect(r.stdout).not.toContain('trainer: SIGTERM: saving');
      expect(r.code, r.stderr).toBe(EXIT_CODES.segmentSaved);
      const newest = newestCompleteOnDisk(join(cwd, 'out'));
      expect(newest).toBeGreaterThanOrEqual(5);
      expect(pointerOf(join(cwd, 'store'))).toMatchObject({ step: newest, terminal: false });
    });

    const SCOPE_STOP =
      'a systemd scope stop (SIGTERM, then SIGHUP, to soup and to the trainer) is one session end: 75, the newest ' +
      'complete checkpoint pushed';
    it(SCOPE_STOP, async () => {
      const cwd = useTempDir('soup-torch-term-hup-');
      const s = soupInGroup(
        ['run', ...OPTIONS, '--poll', '100ms', '--grace', '10s', '--', ...torchArgv(400)],
        cwd,
        slowEnv(cwd),
      );
      await s.waitFor('stdout', /pushed ckpt\/checkpoint-\d+ /);
      const trainer = trainerPid(s.out.stdout);
      for (const g of [s.pid, trainer]) signalGroup(g, 'SIGTERM');
      await s.waitFor('stderr', /soup: SIGTERM: stopping/);
      for (const g of [s.pid, trainer]) signalGroup(g, 'SIGHUP');
      const r = await s.exited;
      expect(r.stderr).toContain('soup: SIGHUP: the session is already ending (SIGTERM); SIGTERM again quits now');
      expect(r.code, r.stderr).toBe(EXIT_CODES.segmentSaved);
      const newest = newestCompleteOnDisk(join(cwd, 'out'));
      expect(newest).toBeGreaterThanOrEqual(5);
      expect(pointerOf(join(cwd, 'store'))).toMatchObject({ step: newest, terminal: false });
    });

    const LEFTOVER =
      'a trainer that leaves `sleep 1000 &` holding its stdout: ended after --grace, named, and the run completes';
    it(LEFTOVER, async () => {
      const cwd = useTempDir('soup-torch-leftover-');
      const argv = ['bash', '-c', 'sleep 1000 & exec "$0" "$@"', ...torchArgv(10)];
      const s = soupInGroup(
        ['run', ...OPTIONS, '--poll', '100ms', '--grace', '1s', '--', ...argv],
        cwd,
        soupEnv(cwd),
        30_000,
      );
      const r = await s.exited;
      const m = new RegExp(HELD + 'ended process (\\d+) \\(sleep 1000\\)').exec(r.stderr);
      expect(m, r.stderr).not.toBeNull();
      expect(running(Number(m![1]))).toBe(false);
      expect(r.code, r.stderr).toBe(EXIT_CODES.ok);
      expect(r.stdout).toMatch(/run complete: pushed final\//);
    });
  },
);
