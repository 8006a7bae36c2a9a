import { describe, expect, it } from 'vitest';
import { describeMicroBatch } from './describe-micro-batch';

describe('describeMicroBatch', () => {
  it('says what changed since the last session', () => {
    const last = { start_step: 1, micro_batch_size: 16, grad_accum: 1, source: 'probe', oom_step_downs: [] };
    expect(describeMicroBatch({ microBatchSize: 4, accumulation: 4 }, last)).toBe(
      'micro 4 × 4 = 16 (was 16 × 1 last session)',
    );
    expect(describeMicroBatch({ microBatchSize: 16, accumulation: 1 }, last)).toBe('micro 16 × 1 = 16');
    expect(describeMicroBatch({ microBatchSize: 4, accumulation: 4 }, undefined)).toBe('micro 4 × 4 = 16');
    expect(describeMicroBatch({ microBatchSize: 2, accumulation: 2, worldSize: 2 }, null)).toBe(
      'micro 2 × 2 × 2 ranks = 8',
    );
  });
});
