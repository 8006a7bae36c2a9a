// soup probe on a trainer that ignores the batch size it is given (issue 47, item 9): every trial
// fits at the same peak, and the answer says nothing about what fits. The known-cost trainer reads
// --micro_batch_size before --per_device_train_batch_size, so {batch_size} in the latter is ignored.
import { runNode, useTempDir } from '@soup/test-utils';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SOUP_BIN } from '../test/run-helpers';

const TWIN = fileURLToPath(new URL('../../../examples/known-cost-trainer/train.mjs', import.meta.url));

describe('soup probe: a peak that stays flat as the batch grows', () => {
  it('warns that the trainer may not read the batch size, naming the sizes and peaks', async () => {
    const cwd = useTempDir();
    const command =
      `${process.execPath} ${TWIN} --micro_batch_size 2 --per_device_train_batch_size {batch_size} ` +
      '--max_steps 1 --per_sample_mib 64 --step_ms 100 --sample_ms 0';
    const r = await runNode(
      [SOUP_BIN, 'probe', '--exec', command, '--budget', '1GiB', '--start', '2', '--ceiling', '16', '--no-cache'],
      { cwd, timeoutMs: 60_000, env: { PATH: process.env.PATH, HOME: cwd, NO_COLOR: '1' } },
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      /batch size 16 fits \(probed on .*, \d trials, .*; its peak did not grow with the size: see the warning\)/,
    );
    expect(r.stdout + r.stderr).toMatch(
      /warning: the peak stayed flat from batch size 2 \([\d.]+ MiB\) to 16 \([\d.]+ MiB\): does the trainer read/,
    );
  });
});
