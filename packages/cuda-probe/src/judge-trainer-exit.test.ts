// A trainer's failure judged outside a probe: what it raised decides, launcher prefixes removed.
import { describe, expect, it } from 'vitest';
import { judgeTrainerExit } from './judge-trainer-exit';

const cudaOom = [
  '[rank0]: Traceback (most recent call last):',
  '[rank0]:   File "train.py", line 40, in <module>',
  '[rank0]:     loss.backward()',
  '[rank0]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.77 GiB total ' +
    'capacity; 13.10 GiB already allocated)',
].join('\n');

describe('judgeTrainerExit', () => {
  it('a CUDA OOM raised under torchrun ([rank0]: prefixes) is out of memory, with its line', () => {
    const v = judgeTrainerExit({ stdout: 'step 11 loss 2.1\n', stderr: `${cudaOom}\n`, code: 1, signal: null });
    expect(v).toEqual({
      oom: true,
      kind: 'pytorch-cuda',
      line: expect.stringMatching(/^torch\.cuda\.OutOfMemoryError: CUDA out of memory\. Tried to allocate 2\.00 GiB/),
    });
  });

  it('Node\'s "RangeError: Array buffer allocation failed" (printed with its stack) is out of memory', () => {
    const stderr =
      'file:///x/train.mjs:12\n    new ArrayBuffer(n);\n    ^\n\nRangeError: Array buffer allocation failed\n    ' +
      'at new ArrayBuffer (<anonymous>)\n    at file:///x/train.mjs:12:5\n\nNode.js v20.11.0\n';
    expect(judgeTrainerExit({ stdout: '', stderr, code: 1, signal: null })).toMatchObject({
      oom: true,
      kind: 'node-buffer',
    });
  });

  it('a KeyError, a log line that only mentions memory, and a bare SIGKILL are not out of memory', () => {
    const keyError =
      'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n    row["text"]\nKeyError: ' +
      "'text'\n";
    expect(judgeTrainerExit({ stdout: '', stderr: keyError, code: 1, signal: null })).toMatchObject({
      oom: false,
      kind: null,
      line: expect.stringContaining("KeyError: 'text'"),
    });
    const chatty =
      'hint: lower the batch if you run out of memory\nTraceback (most recent call last):\n  File "t.py", line ' +
      '1\nValueError: bad shape\n';
    expect(judgeTrainerExit({ stdout: '', stderr: chatty, code: 1, signal: null }).oom).toBe(false);
    expect(judgeTrainerExit({ stdout: 'step 3\n', stderr: '', code: null, signal: 'SIGKILL' }).oom).toBe(false);
  });
});
