import { describe, expect, it } from 'vitest';
import { SupervisorUsageError } from './errors';
import { nodeRoleOf } from './node-role';

const none = { flags: {}, env: {}, argv: ['python', 'train.py'] };

/** The usage error nodeRoleOf throws for `input`: its field and message. */
function refusal(input: Parameters<typeof nodeRoleOf>[0]): { field: string; message: string } {
  try {
    nodeRoleOf(input);
  } catch (err) {
    expect(err).toBeInstanceOf(SupervisorUsageError);
    const e = err as SupervisorUsageError;
    return { field: e.field, message: e.message };
  }
  throw new Error('nodeRoleOf did not refuse');
}

describe('nodeRoleOf', () => {
  it('one node when nothing says otherwise; SLURM_JOB_ID kept', () => {
    expect(nodeRoleOf(none)).toEqual({ rank: 0, count: 1, source: 'single', slurmJobId: null });
    expect(nodeRoleOf({ ...none, env: { SLURM_JOB_ID: '77' } }).slurmJobId).toBe('77');
  });

  it('flags first, then SLURM, then torchrun', () => {
    expect(nodeRoleOf({ ...none, flags: { nodeRank: 1, nnodes: 2 } })).toMatchObject({
      rank: 1,
      count: 2,
      source: 'flags',
    });
    expect(nodeRoleOf({ ...none, env: { SLURM_NODEID: '2', SLURM_NNODES: '4', SLURM_JOB_ID: '9' } })).toEqual({
      rank: 2,
      count: 4,
      source: 'slurm',
      slurmJobId: '9',
    });
    const torch = ['torchrun', '--nnodes', '2', '--node_rank', '1', '--nproc_per_node', '1', 'train.py'];
    expect(nodeRoleOf({ ...none, argv: torch })).toMatchObject({ rank: 1, count: 2, source: 'torchrun' });
  });

  it('reads torchrun as --nnodes=N, --node-rank, N:N, and via python -m torch.distributed.run', () => {
    for (const argv of [
      ['/usr/bin/torchrun', '--nnodes=3', '--node-rank=2', 'train.py'],
      ['python', '-m', 'torch.distributed.run', '--standalone', '--nnodes', '3:3', '--node-rank', '2', 'train.py'],
    ])
      expect(nodeRoleOf({ ...none, argv })).toMatchObject({ rank: 2, count: 3, source: 'torchrun' });
  });

  it("ignores the script's own --nnodes after torchrun's script, and a command without torchrun", () => {
    expect(nodeRoleOf({ ...none, argv: ['torchrun', '--nproc_per_node', '2', 'train.py', '--nnodes', '5'] })).toEqual({
      rank: 0,
      count: 1,
      source: 'single',
      slurmJobId: null,
    });
    expect(nodeRoleOf({ ...none, argv: ['python', 'train.py', '--nnodes', '2', '--node_rank', '1'] }).count).toBe(1);
  });

  it('sources that agree are accepted; the first one names the source', () => {
    const r = nodeRoleOf({
      flags: { nodeRank: 1, nnodes: 2 },
      env: { SLURM_NODEID: '1', SLURM_NNODES: '2' },
      argv: ['torchrun', '--nnodes=2', '--node_rank=1', 'train.py'],
    });
    expect(r).toMatchObject({ rank: 1, count: 2, source: 'flags' });
  });

  it('a contradiction names both places and the field', () => {
    expect(refusal({ ...none, flags: { nodeRank: 0, nnodes: 2 }, env: { SLURM_NODEID: '1' } })).toEqual({
      field: 'nodeRank',
      message: '--node-rank 0 but SLURM_NODEID=1: the node rank must be the same in every place it is given',
    });
    expect(
      refusal({ ...none, env: { SLURM_NNODES: '2' }, argv: ['torchrun', '--nnodes', '4', '--node_rank', '0', 'x'] }),
    ).toEqual({
      field: 'nnodes',
      message: 'SLURM_NNODES=2 but torchrun --nnodes 4: the node count must be the same in every place it is given',
    });
  });

  it('refuses a rank without a count, a count without a rank, a rank past the count, an elastic range, junk', () => {
    expect(refusal({ ...none, flags: { nodeRank: 1 } })).toMatchObject({ field: 'nnodes' });
    expect(refusal({ ...none, flags: { nnodes: 2 } })).toMatchObject({ field: 'nodeRank' });
    expect(refusal({ ...none, flags: { nodeRank: 2, nnodes: 2 } }).message).toBe(
      '--node-rank 2 with --nnodes 2: the rank must be below the node count',
    );
    expect(refusal({ ...none, argv: ['torchrun', '--nnodes', '1:4', 'train.py'] }).message).toMatch(/fixed node count/);
    expect(refusal({ ...none, env: { SLURM_NODEID: 'one', SLURM_NNODES: '2' } })).toEqual({
      field: 'nodeRank',
      message: 'SLURM_NODEID=one: expected an integer >= 0',
    });
  });
});
