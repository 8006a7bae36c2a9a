// supervise() refuses options that cannot make a session before it touches the store or launches anything: each
// refusal is a SupervisorUsageError naming the field, and the store stays empty.
import { DirStore } from '@soup/hub-ckpt';
import { useTempDir } from '@soup/test-utils';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SupervisorUsageError } from './errors';
import { supervise, type SuperviseOptions } from './supervise';

/** The refusal supervise() throws for `extra`: its field and message; the store is left untouched. */
async function refusal(extra: Partial<SuperviseOptions>): Promise<{ field: string; message: string }> {
  const cwd = useTempDir('soup-check-options-');
  const root = join(cwd, 'store');
  const err = await supervise({
    argv: [process.execPath, '-e', '0', '{output_dir}'],
    store: new DirStore({ root }),
    outputDir: join(cwd, 'out'),
    cwd,
    env: { PATH: process.env.PATH },
    signal: new AbortController().signal,
    ...extra,
  }).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SupervisorUsageError);
  expect(existsSync(root)).toBe(false);
  const e = err as SupervisorUsageError;
  return { field: e.field, message: e.message };
}

describe('supervise(): usage refusals name the field', () => {
  it('{max_steps} without a horizon, {batch_size} without a batch size', async () => {
    expect(await refusal({ argv: ['node', 'train.js', '--max_steps', '{max_steps}'] })).toEqual({
      field: 'horizon',
      message: "the trainer command uses {max_steps}: pass --horizon N (the run's total steps)",
    });
    expect(await refusal({ argv: ['node', 'train.js', '--bs', '{batch_size}'] })).toEqual({
      field: 'batchSize',
      message: 'the trainer command uses {batch_size}: pass --batch-size N or --batch-size auto',
    });
  });

  it('a step regex that is not one', async () => {
    const r = await refusal({ stepRegex: 'step-(' });
    expect(r.field).toBe('stepRegex');
    expect(r.message).toMatch(/^--step-regex step-\(: not a regular expression \(/);
  });

  it('--requeue outside SLURM; nodes that disagree', async () => {
    expect(await refusal({ requeue: true })).toEqual({
      field: 'requeue',
      message: '--requeue asks SLURM to run the job again, but SLURM_JOB_ID is not set',
    });
    const env = { PATH: process.env.PATH, SLURM_NODEID: '1', SLURM_NNODES: '2' };
    expect(await refusal({ env, nodeFlags: { nodeRank: 0, nnodes: 2 } })).toMatchObject({
      field: 'nodeRank',
      message: expect.stringMatching(/^--node-rank 0 but SLURM_NODEID=1/),
    });
  });
});
