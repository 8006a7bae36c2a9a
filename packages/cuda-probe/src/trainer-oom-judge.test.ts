import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { createTrainerOomJudge } from './trainer-oom-judge';

describe('createTrainerOomJudge', () => {
  it('takes what the trainer raised, under a launcher prefix', () => {
    const judge = createTrainerOomJudge();
    judge.launched(process.pid);
    const line = judge.judge({
      stdoutTail: [],
      stderrTail: ['[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB'],
      code: 1,
      signal: null,
    });
    expect(line).toMatch(/CUDA out of memory/);
  });

  it('a SIGKILL that is not memory (kill -9 of the trainer) is not out of memory', async () => {
    const judge = createTrainerOomJudge();
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    judge.launched(child.pid!);
    const ended = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_c, s) => resolve(s)));
    child.kill('SIGKILL');
    const signal = await ended;
    expect(signal).toBe('SIGKILL');
    expect(judge.judge({ stdoutTail: [], stderrTail: [], code: null, signal })).toBeNull();
    // Exit 137 through a wrapper, with no kernel evidence either.
    expect(judge.judge({ stdoutTail: [], stderrTail: ['Killed'], code: 137, signal: null })).toBeNull();
  });

  it('a failure before any launch was recorded is judged by its text only', () => {
    const judge = createTrainerOomJudge();
    expect(judge.judge({ stdoutTail: [], stderrTail: [], code: null, signal: 'SIGKILL' })).toBeNull();
  });
});
