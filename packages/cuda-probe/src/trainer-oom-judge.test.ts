import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createMemoryCgroup, memoryCgroupSupport, removeMemoryCgroup } from './_memory-cgroup';
import { createTrainerOomJudge } from './trainer-oom-judge';

const support = memoryCgroupSupport();
const noCgroup = support.available ? null : support.reason;
if (noCgroup) console.log(`skipping the cgroup OOM-kill case: ${noCgroup}`);

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

  it.skipIf(noCgroup !== null)(
    "a wrapper's child OOM-killed in the trainer's own memory cgroup (exit 137, nothing printed) is out of memory",
    async () => {
      if (!support.available) throw new Error('unreachable');
      const cg = createMemoryCgroup(support, 64 * 2 ** 20, 'soup-test-judge');
      try {
        const judge = createTrainerOomJudge();
        // The shell enters the cgroup, then forks the trainer, which grows mid-run: the process the kernel kills is not
        // the one launched.
        const alloc = 'setTimeout(() => { const k = []; for (;;) k.push(Buffer.alloc(8 * 2 ** 20, 1)); }, 600);';
        const child = spawn(
          'sh',
          [
            '-c',
            'echo $$ > "$0" || exit 125; "$@"; exit $?',
            join(cg.dir, 'cgroup.procs'),
            process.execPath,
            '-e',
            alloc,
          ],
          { stdio: 'ignore' },
        );
        judge.launched(child.pid!);
        const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
        expect(code).toBe(137);
        expect(judge.judge({ stdoutTail: [], stderrTail: [], code, signal: null })).toMatch(
          /^killed by SIGKILL: its memory cgroup .* counted 1 oom_kill event|named in the kernel log/,
        );
      } finally {
        removeMemoryCgroup(cg.dir);
      }
    },
  );
});
