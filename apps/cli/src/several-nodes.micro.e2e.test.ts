// [slow: each node probes its device with real trainer steps, then both train 2 data-parallel steps] One micro-batch
// for all ranks: two `soup run` nodes (own hostnames) with a global batch of 16 over 2 ranks, node 1 under a lower
// --budget. Each probes its own device; both train node 1's smaller m, and both logs say node 1 decided.
import { useTempDir } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import { startSoupNode } from '../test/node-helpers';
import { freePort } from '../test/rank-helpers';
import { NODE_TRAINER, soupEnv } from '../test/run-helpers';

// Long sequences: a micro-batch's activations are what the budget tells apart (≈ 5 MiB a sample).
const SHAPE = ['--d_model', '32', '--n_layers', '2', '--seq_len', '320'];
const PROBE = [
  process.execPath,
  NODE_TRAINER,
  '--output_dir',
  'probe-out',
  '--per_device_train_batch_size',
  '{micro_batch_size}',
  '--max_steps',
  '1',
  '--save_steps',
  '0',
  ...SHAPE,
].join(' ');
/** The trainer as a launcher starts rank `rank` of 2: torchrun's environment for the trainer only (not the probe). */
const argvOf = (rank: number, port: number): string[] => [
  'env',
  'WORLD_SIZE=2',
  `RANK=${rank}`,
  'MASTER_ADDR=127.0.0.1',
  `MASTER_PORT=${port}`,
  process.execPath,
  NODE_TRAINER,
  '--output_dir',
  '{output_dir}',
  '--per_device_train_batch_size',
  '{micro_batch_size}',
  '--gradient_accumulation_steps',
  '{grad_accum}',
  '--max_steps',
  '2',
  '--save_steps',
  '1',
  '--resume_from_checkpoint',
  '{resume_from}',
  ...SHAPE,
];

describe('[slow] several nodes: one micro-batch for all ranks', { timeout: 120_000 }, () => {
  it('node 1 under a lower --budget: both nodes train its m, and the log says node 1 decided', async () => {
    const cwd = useTempDir('soup-nodes-micro-');
    const env = soupEnv(cwd);
    const port = await freePort();
    const common = ['--repo', 'file://store', '--output-dir', 'out', '--nnodes', '2', '--nodes-dir', 'nodes'];
    const batch = ['--global-batch-size', '16', '--world-size', '2', '--no-cache', '--probe', PROBE];
    const rest = ['--settle', '300ms', '--poll', '100ms', '--grace', '20s'];
    const start = (rank: number, budget: string) =>
      startSoupNode({
        cwd,
        rank,
        options: [...common, '--node-rank', String(rank), ...batch, '--budget', budget, ...rest],
        argv: argvOf(rank, port),
        env,
        marker: /soup: /,
        timeoutMs: 100_000,
      });
    const [n0, n1] = await Promise.all([start(0, '4GiB'), start(1, '128MiB')]);
    const [r0, r1] = await Promise.all([n0.exited, n1.exited]);
    expect(r0.code, r0.stdout + r0.stderr).toBe(0);
    expect(r1.code, r1.stdout + r1.stderr).toBe(0);
    const decided = /micro-batch (\d+): node 1 \(node-1\) fits least \(budget 128 MiB\)/;
    const m = Number(decided.exec(r1.stdout)?.[1]);
    expect(m).toBeLessThan(8); // node 0's device (4 GiB) fits the whole 16 / 2 ranks = 8
    expect(r0.stdout).toMatch(decided);
    expect(decided.exec(r0.stdout)?.[1]).toBe(String(m));
    // Each node's probe answered on its own device; both trainers ran node 1's m.
    for (const r of [r0, r1])
      expect(r.stdout).toContain(`batch ${m} × ${8 / m} accumulated × 2 ranks`.replace(' × 1 accumulated', ''));
  });
});
