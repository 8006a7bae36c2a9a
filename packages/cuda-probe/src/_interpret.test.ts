import { describe, expect, it } from 'vitest';
import type { ChildRun } from './_child-runner';
import { CORPUS } from './_fixtures/error-corpus';
import { judgeFailure, stderrTailOf } from './_interpret';
import { raisedLines } from './_raised';
import { ProbeChildError } from './errors';

function runOf(c: { stderr: string; stdout?: string; exitCode: number | null; signal?: NodeJS.Signals }): ChildRun {
  return {
    pid: 1,
    exitCode: c.exitCode,
    signal: c.signal ?? null,
    stdout: c.stdout ?? '',
    stderr: c.stderr,
    result: undefined,
    timedOut: false,
    aborted: false,
    wallMs: 1,
    sampledPeakRssBytes: null,
    killedAboveRss: false,
  };
}

function verdictOf(c: (typeof CORPUS)[number]): string {
  try {
    const v = judgeFailure(runOf(c), { batchSize: 8, timeoutMs: 1000, what: 'command "python"' });
    return v.reason === 'oom' ? `oom:${v.oom.kind}` : v.reason;
  } catch (err) {
    if (!(err instanceof ProbeChildError)) throw err;
    const m = /— (\S+) is a crash/.exec(err.message);
    return m ? `error:${m[1]}` : 'error';
  }
}

describe('judgeFailure on the corpus of real trainer errors', () => {
  it('holds at least 40 texts covering every family the issue names', () => {
    expect(CORPUS.length).toBeGreaterThanOrEqual(40);
    const names = CORPUS.map((c) => c.name).join('\n');
    for (const family of [
      'torch 1.13',
      'torch 2',
      'HIP',
      'MPS',
      'CPU',
      'ORT',
      'CUDA EP',
      'TF',
      'JAX',
      'XLA',
      'DeepSpeed',
      'bitsandbytes',
      'MemoryError',
      'Killed',
      'illegal memory access',
      'NCCL',
      'gRPC',
    ]) {
      expect(names).toContain(family);
    }
  });

  it.each(CORPUS.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    expect(verdictOf(c)).toBe(c.expect);
  });

  it('names the exception the trainer raised in the error, not a hint it logged', () => {
    const c = CORPUS.find((x) => x.name.startsWith('KeyError'))!;
    expect(() => judgeFailure(runOf(c), { batchSize: 8, timeoutMs: 1000, what: 'command' })).toThrow(
      /failed \(exit code 1\): KeyError: 'text'/,
    );
  });

  it('keeps the last 20 lines of stderr for the user', () => {
    const stderr = Array.from({ length: 50 }, (_, i) => `line ${i + 1}`).join('\n');
    const tail = stderrTailOf({ stderr, stdout: '' });
    expect(tail.split('\n')).toHaveLength(20);
    expect(tail.split('\n')[0]).toBe('line 31');
    expect(tail.split('\n')[19]).toBe('line 50');
  });

  it('reads launcher-prefixed tracebacks as tracebacks', () => {
    const r = raisedLines(
      '[rank0]: Traceback (most recent call last):\n[rank0]:   File "x.py", line 1, in <module>\n[rank0]:     ' +
        'f()\n[rank0]: KeyError: 1',
    );
    expect(r).toEqual({ lines: ['KeyError: 1'], blocks: [['KeyError: 1']], source: 'traceback' });
  });

  it('says what judged the trial', () => {
    const oomTb = CORPUS.find((x) => x.name === 'torch 2.0 torch.cuda.OutOfMemoryError')!;
    expect(judgeFailure(runOf(oomTb), { batchSize: 8, timeoutMs: 1000, what: 'c' }).judgedBy).toBe('traceback');
    const killed = CORPUS.find((x) => x.name.startsWith('bash wrapper'))!;
    const v = judgeFailure(runOf(killed), { batchSize: 8, timeoutMs: 1000, what: 'c' });
    expect(v).toMatchObject({ reason: 'killed', judgedBy: 'exit-status' });
    expect(v.detail).toContain('exited 137');
    expect(v.detail).toContain('"Killed"');
  });
});
