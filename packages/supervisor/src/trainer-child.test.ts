import { describe, expect, it } from 'vitest';
import { stillRunning } from './_process-tree';
import { expandArgv, startTrainer, trainerEnv, trainerErrorLine } from './trainer-child';

const ARGV = [
  'python',
  'train.py',
  '--bs',
  '{batch_size}',
  '--out={output_dir}',
  '--resume_from_checkpoint',
  '{resume_from}',
  '--tag',
  'x{resume_from}y',
];

describe('trainer child', () => {
  it('expands placeholders when resuming', () => {
    expect(expandArgv(ARGV, { batchSize: 8, outputDir: '/o', resumeFrom: '/o/checkpoint-20' })).toEqual([
      'python',
      'train.py',
      '--bs',
      '8',
      '--out=/o',
      '--resume_from_checkpoint',
      '/o/checkpoint-20',
      '--tag',
      'x/o/checkpoint-20y',
    ]);
  });

  it('on a fresh run drops `--flag {resume_from}` and `--flag={resume_from}`, empties it elsewhere', () => {
    expect(expandArgv(ARGV, { batchSize: 8, outputDir: '/o', resumeFrom: null })).toEqual([
      'python',
      'train.py',
      '--bs',
      '8',
      '--out=/o',
      '--tag',
      'xy',
    ]);
    expect(
      expandArgv(['t', '--resume={resume_from}', '{resume_from}'], {
        batchSize: null,
        outputDir: '/o',
        resumeFrom: null,
      }),
    ).toEqual(['t']);
    expect(trainerEnv({ A: '1' }, { batchSize: null, outputDir: '/o', resumeFrom: null })).toEqual({
      A: '1',
      SOUP_BATCH_SIZE: '',
      SOUP_OUTPUT_DIR: '/o',
      SOUP_RESUME_FROM: '',
    });
  });

  it('judges a failure by the error raised, launcher prefixes removed', () => {
    expect(
      trainerErrorLine([
        'Traceback (most recent call last):',
        '  File "t.py", line 3',
        '[rank0]: torch.OutOfMemoryError: CUDA out of memory.',
        'wandb: syncing',
      ]),
    ).toBe('torch.OutOfMemoryError: CUDA out of memory.');
    expect(trainerErrorLine(['just a line'])).toBe('just a line');
  });

  it('stop: signal, then SIGKILL after the grace when the child ignores it', async () => {
    let up: () => void = () => {};
    const ready = new Promise<void>((r) => (up = r));
    const child = await startTrainer({
      argv: [
        process.execPath,
        '-e',
        "process.on('SIGTERM', () => console.log('ignored')); console.log('up'); setInterval(() => {}, 1000)",
      ],
      env: process.env,
      cwd: process.cwd(),
      onStdout: (d) => d.includes('up') && up(),
      onStderr: () => {},
    });
    await ready; // the handler is installed
    const end = await child.stop({ signal: 'SIGTERM', graceMs: 500 });
    expect(end).toMatchObject({ killed: true, signal: 'SIGKILL', code: null });
    const polite = await startTrainer({
      argv: [process.execPath, '-e', 'setInterval(() => {}, 1000)'],
      env: process.env,
      cwd: process.cwd(),
      onStdout: () => {},
      onStderr: () => {},
    });
    expect(await polite.stop({ signal: 'SIGTERM', graceMs: 20_000 })).toMatchObject({
      killed: false,
      signal: 'SIGTERM',
    });
  });

  it('a child that outlives the trainer holding its stdout: waited for pipeGraceMs, then ended and named', async () => {
    const started = Date.now();
    const child = await startTrainer({
      argv: ['bash', '-c', 'sleep 1000 & echo trainer done'],
      env: process.env,
      cwd: process.cwd(),
      onStdout: () => {},
      onStderr: () => {},
      pipeGraceMs: 300,
    });
    const end = await child.exited;
    expect(end).toMatchObject({ code: 0, signal: null, outputHeld: true, stdoutTail: ['trainer done'] });
    expect(end.leftovers).toHaveLength(1);
    expect(end.leftovers![0]!.command).toBe('sleep 1000');
    // Gone, or a zombie its new parent (init) has not reaped yet.
    expect(stillRunning({ pid: end.leftovers![0]!.pid, startTicks: end.leftovers![0]!.startTicks }), 'sleep runs').toBe(
      false,
    );
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
