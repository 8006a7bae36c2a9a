import { describe, expect, it } from 'vitest';
import { microBatchOneWarning } from './micro-batch-one-warning';

describe('microBatchOneWarning: only 1 fits a global batch with larger divisors', () => {
  it('names G as the caller set it, the next divisor that did not fit, and a G with more divisors', () => {
    expect(microBatchOneWarning({ globalBatchSize: 7, worldSize: 1, batchSize: 1 })).toBe(
      'micro-batch 1: no larger divisor of --global-batch-size 7 fits this device (the next, 7, did not), so each ' +
        'step accumulates 7 micro-batches of 1; a global batch with more divisors (e.g. 8) may use the device better',
    );
    expect(
      microBatchOneWarning({ globalBatchSize: 9, worldSize: 1, batchSize: 1, globalBatchName: 'training.batch_size' }),
    ).toMatch(/^micro-batch 1: no larger divisor of training\.batch_size 9 fits this device \(the next, 3, did not\)/);
    expect(microBatchOneWarning({ globalBatchSize: 12, worldSize: 2, batchSize: 1 })).toMatch(
      /^micro-batch 1: no larger divisor of G \/ world size = 6 fits .*\(e\.g\. 6 per rank\)/,
    );
  });

  it('says nothing for a larger micro-batch, or where G / N is 1', () => {
    expect(microBatchOneWarning({ globalBatchSize: 8, worldSize: 1, batchSize: 2 })).toBeNull();
    expect(microBatchOneWarning({ globalBatchSize: 2, worldSize: 2, batchSize: 1 })).toBeNull();
  });
});
