// Where sessions end (docs/session-ends.md), on real `soup run` / `soup train` processes and the Node trainers:
// SIGUSR1 to soup's whole process group (SLURM's --signal=B:USR1) is a session end, never a debugger; SIGUSR1 to every
// process of the job (--signal=USR1, no B:) too; a systemd scope's SIGTERM then SIGHUP is one session end; and a
// process the trainer started that keeps its output open is ended after --grace. The PyTorch twins are in
// session-signals.torch.test.ts.
import { useTempDir } from '@soup/test-utils';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { assetPath } from './_assets';
import { EXIT_CODES } from './exit-codes';
import { nodeTrainerArgv, pointerOf, soupEnv, trainerPid } from '../test/run-helpers';
import { listeningPorts, newestCompleteOnDisk, running, signalGroup, soupInGroup } from '../test/signal-helpers';

const OPTIONS = ['--repo', 'file://store', '--output-dir', 'out', '--batch-size', '4', '--settle', '300ms'];
const RUN = [...OPTIONS, '--poll', '100ms', '--grace', '10s', '--'];
// 400 steps of >= 40 ms: the session is always ended by the signal, long before its horizon.
const LONG = nodeTrainerArgv({ maxSteps: 400, saveSteps: 5 });
const SCOPE_STOP =
  'a systemd scope stop (SIGTERM, then SIGHUP, to soup and to the trainer) is one session end: 75, the newest ' +
  'complete checkpoint pushed';
const slowEnv = (cwd: string): NodeJS.ProcessEnv => soupEnv(cwd, { SOUP_EXAMPLE_STEP_DELAY_MS: '40' });

describe('[slow] session ends by signal (soup run, Node trainer)', { timeout: 60_000 }, () => {
  const USR1 =
    "SIGUSR1 to soup's process group: no debugger (no listening socket), a session end (75), the newest complete " +
    'checkpoint pushed';
  it(USR1, async () => {
    const cwd = useTempDir('soup-usr1-');
    const s = soupInGroup(['run', ...RUN, ...LONG], cwd, slowEnv(cwd));
    await s.waitFor('stdout', /pushed ckpt\/checkpoint-\d+ /);
    signalGroup(s.pid, 'SIGUSR1');
    // Either soup ends the session, or Node opened its debugger (what SIGUSR1 does to a Node process by default).
    const ending = s.waitFor('stdout', /session ending \(signal SIGUSR1\): sending SIGTERM to the trainer/);
    const debuggerOpen = s.waitFor('stderr', /Debugger listening|Starting inspector/);
    await Promise.race([ending, debuggerOpen]).catch(() => {});
    debuggerOpen.catch(() => {});
    ending.catch(() => {});
    expect(listeningPorts(s.pid), 'soup listens on a port after SIGUSR1').toEqual([]);
    const r = await s.exited;
    expect(r.stderr).not.toMatch(/Debugger listening/);
    expect(r.code, r.stderr).toBe(EXIT_CODES.segmentSaved);
    await ending;
    const newest = newestCompleteOnDisk(join(cwd, 'out'));
    expect(newest).toBeGreaterThanOrEqual(5);
    expect(pointerOf(join(cwd, 'store'))).toMatchObject({ step: newest, terminal: false });
  });

  it(SCOPE_STOP, async () => {
    const cwd = useTempDir('soup-term-hup-');
    const s = soupInGroup(['run', ...RUN, ...LONG], cwd, slowEnv(cwd));
    await s.waitFor('stdout', /pushed ckpt\/checkpoint-\d+ /);
    const trainer = trainerPid(s.out.stdout);
    for (const g of [s.pid, trainer]) signalGroup(g, 'SIGTERM');
    await s.waitFor('stderr', /soup: SIGTERM: stopping/);
    for (const g of [s.pid, trainer]) signalGroup(g, 'SIGHUP');
    const r = await s.exited;
    expect(r.stderr).toContain('soup: SIGHUP: the session is already ending (SIGTERM); SIGTERM again quits now');
    expect(r.stderr).not.toContain('quitting now');
    expect(r.code, r.stderr).toBe(EXIT_CODES.segmentSaved);
    const newest = newestCompleteOnDisk(join(cwd, 'out'));
    expect(newest).toBeGreaterThanOrEqual(5);
    expect(pointerOf(join(cwd, 'store'))).toMatchObject({ step: newest, terminal: false });
  });

  const LEFTOVER =
    'a trainer that leaves `sleep 1000 &` (and a setsid one) holding its stdout: both ended after --grace, named, ' +
    'and the run completes';
  it(LEFTOVER, async () => {
    const cwd = useTempDir('soup-leftover-');
    const argv = [
      'bash',
      '-c',
      'sleep 1000 & setsid sleep 1001 & exec "$0" "$@"',
      ...nodeTrainerArgv({ maxSteps: 10, saveSteps: 5 }),
    ];
    const started = Date.now();
    const s = soupInGroup(
      ['run', ...OPTIONS, '--poll', '100ms', '--grace', '1s', '--', ...argv],
      cwd,
      soupEnv(cwd),
      30_000,
    );
    const r = await s.exited;
    const ended = [...r.stderr.matchAll(/(\d+) \((sleep 100[01])\)/g)].map((m) => ({
      pid: Number(m[1]),
      command: m[2],
    }));
    expect(r.stderr).toMatch(
      /the trainer exited, but what it started still held its output after 1\.0s: ended processes /,
    );
    expect(ended.map((e) => e.command).sort()).toEqual(['sleep 1000', 'sleep 1001']);
    for (const e of ended) expect(running(e.pid), `${e.command} (pid ${e.pid}) still runs`).toBe(false);
    expect(r.code, r.stderr).toBe(EXIT_CODES.ok);
    expect(r.stdout).toMatch(/run complete: pushed final\//);
    expect(Date.now() - started).toBeLessThan(25_000);
  });
});

const HORIZON = 12;
const CONFIG = `base: soup/session-signals-gpt
model: {vocab_size: 256, d_model: 128, n_heads: 4, n_layers: 4, d_ff: 512}
data:
  train: ${assetPath('corpus/train.txt')}
  val: ${assetPath('corpus/val.txt')}
  max_length: 128
training:
  steps: ${HORIZON}
  batch_size: 32
  micro_batch_size: 32
  lr: 0.003
  warmup_steps: 2
  threads: 1
  val_batches: 2
`;

describe('[slow] session ends by signal (soup train)', { timeout: 90_000 }, () => {
  const SLURM =
    'SIGUSR1 to every process of the job (SLURM --signal=USR1@90, no B:): no debugger, a session end (75), the saved ' +
    'step pushed';
  it(SLURM, async () => {
    const cwd = useTempDir('soup-train-usr1-');
    writeFileSync(join(cwd, 'soup.yaml'), CONFIG);
    const args = ['train', '-c', 'soup.yaml', '--repo', 'file://store', '--push-every-steps', '2'];
    const s = soupInGroup(args, cwd, soupEnv(cwd));
    await s.waitFor('stderr', /pushed ckpt\/checkpoint-2 /);
    const trainer = trainerPid(s.out.stderr);
    for (const g of [s.pid, trainer]) signalGroup(g, 'SIGUSR1');
    const r = await s.exited;
    expect(r.stderr).not.toMatch(/Debugger listening/);
    expect(r.code, r.stderr).toBe(EXIT_CODES.segmentSaved);
    const newest = newestCompleteOnDisk(join(cwd, 'soup-output', 'checkpoints'));
    expect(newest).toBeLessThan(HORIZON);
    expect(pointerOf(join(cwd, 'store'))).toMatchObject({ step: newest, terminal: false });
  });
});
