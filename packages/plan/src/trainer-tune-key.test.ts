// The tune key of a trainer command holds how its runs show their steps (--steps-pattern, --steps-file): a choice
// measured without them may be a row they would have refused ("not timed"), so it is not reused once they are given.
import { useTempDir } from '@soup/test-utils';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { trainerTuneKey } from './trainer-tune';

describe('trainerTuneKey', () => {
  it('is another key with a declared step pattern or trainer_state.json, and the same for the same', () => {
    const cwd = useTempDir();
    writeFileSync(join(cwd, 'train.py'), 'print(1)\n');
    const base = {
      command: 'python3 train.py --bs {micro_batch_size} --x {x} --max_steps {probe_steps}',
      tries: { x: ['a', 'b'] },
      cwd,
      env: { PATH: process.env.PATH },
    };
    const plain = trainerTuneKey(base).command;
    const pattern = trainerTuneKey({ ...base, steps: { pattern: '^step (\\d+)' } }).command;
    const file = trainerTuneKey({ ...base, steps: { file: 'out' } }).command;
    expect(new Set([plain, pattern, file]).size).toBe(3);
    expect(trainerTuneKey({ ...base, steps: { pattern: '^step (\\d+)' } }).command).toBe(pattern);
    expect(pattern).toBe(`${plain} | --steps-pattern ^step (\\d+)`);
  });
});
