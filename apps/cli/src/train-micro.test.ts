// The pure parts of soup train's micro-batch: the line a session starts with, --max-memory, and the tuner's own
// peak beside the trainer's.
import { resolveMaxMemory, type SessionPeakReport } from '@soup/supervisor';
import { describe, expect, it } from 'vitest';
import { describeMicroBatch, describeTuning } from './_session';
import { parseBytes } from '@soup/config';

describe('describeMicroBatch', () => {
  it('says what changed since the last session', () => {
    const last = { start_step: 1, micro_batch_size: 16, grad_accum: 1, source: 'probe', oom_step_downs: [] };
    expect(describeMicroBatch({ microBatchSize: 4, accumulation: 4 }, last)).toBe(
      'micro 4 × 4 = 16 (was 16 × 1 last session)',
    );
    expect(describeMicroBatch({ microBatchSize: 16, accumulation: 1 }, last)).toBe('micro 16 × 1 = 16');
    expect(describeMicroBatch({ microBatchSize: 4, accumulation: 4 }, undefined)).toBe('micro 4 × 4 = 16');
  });
});

describe('--max-memory', () => {
  it('a size or a fraction of the budget; a fraction without a budget is unknown', () => {
    expect(resolveMaxMemory('6GiB', null, parseBytes)).toBe(6 * 2 ** 30);
    expect(resolveMaxMemory('0.9', 1000, parseBytes)).toBe(900);
    expect(resolveMaxMemory('90%', 1000, parseBytes)).toBe(900);
    expect(resolveMaxMemory('90%', null, parseBytes)).toBeNull();
    expect(resolveMaxMemory(undefined, 1000, parseBytes)).toBeNull();
  });
});

describe("the tuner's peak, measured apart", () => {
  it("reports the tuner's peak beside the trainer's, never counted in it, and nothing without one", () => {
    const MiB = 2 ** 20;
    const report = (tuning: SessionPeakReport['tuning']): SessionPeakReport => ({
      peak_bytes: 300 * MiB,
      peak_at: 'step 3',
      peak_step: 3,
      budget_bytes: 400 * MiB,
      budget_source: 'memory_budget',
      headroom_bytes: 100 * MiB,
      max_memory_bytes: null,
      max_memory_passed_at: null,
      method: 'tree-rss',
      ...(tuning ? { tuning } : {}),
    });
    expect(
      describeTuning(report({ peak_bytes: 671 * MiB, in_session_peak: false, resident_at_reset_bytes: null })),
    ).toBe(
      "; before it, the tuner's timing sessions took soup's own process to 671 MiB (measured apart: the trainer " +
        'is a process of its own)',
    );
    expect(describeTuning(report(undefined))).toBe('');
    expect(describeTuning(null)).toBe('');
  });
});
