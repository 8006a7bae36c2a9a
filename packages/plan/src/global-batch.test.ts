import { describe, expect, it } from 'vitest';
import { probeGlobalBatch, runGlobalBatch } from './global-batch';

describe('a global batch G over N ranks: the flags checked for soup run and soup probe --exec', () => {
  it('G = 48 on 2 ranks: m answers a divisor of 24, shaped m × a × N', () => {
    const { batch, errors } = runGlobalBatch({ globalBatchSize: 48, worldSize: 2, argv: ['t'], probe: 'p' });
    expect(errors).toEqual([]);
    expect(batch).toMatchObject({ globalBatchSize: 48, worldSize: 2, perRank: 24, headroom: 0 });
    expect(batch!.fields(8)).toEqual({
      micro_batch_size: 8,
      grad_accum: 3,
      global_batch_size: 48,
      world_size: 2,
      micro_batch: batch!.shape(8),
    });
  });

  it('refuses, naming the flag: G not a multiple of N, no --probe, --batch-size with G, {grad_accum} alone', () => {
    const first = (o: Parameters<typeof runGlobalBatch>[0]) => runGlobalBatch(o).errors[0];
    expect(first({ globalBatchSize: 10, worldSize: 4, argv: [], probe: 'p' })).toMatch(/pick G = 12$/);
    expect(first({ globalBatchSize: 8, argv: [] })).toMatch(/^--global-batch-size needs --probe/);
    expect(first({ globalBatchSize: 8, argv: [], batchSize: '4', probe: 'p' })).toMatch(/^--batch-size and --global/);
    expect(first({ argv: ['--accum', '{grad_accum}'] })).toMatch(
      /^the trainer command uses {grad_accum}: pass --global/,
    );
    expect(first({ worldSize: 2, argv: [] })).toMatch(/^--world-size needs --global-batch-size G/);
    expect(runGlobalBatch({ argv: ['t'] })).toEqual({ batch: null, errors: [] });
    expect(probeGlobalBatch({ globalBatchSize: 8, mode: 'config' }).errors[0]).toMatch(/applies to soup probe --exec/);
    expect(probeGlobalBatch({ headroom: 0.1, mode: 'exec' }).errors[0]).toMatch(
      /^--headroom needs --global-batch-size/,
    );
  });
});
