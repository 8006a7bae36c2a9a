import { describe, expect, it } from 'vitest';
import { emptySessionResult, memoryReportOf, microBatchFields, segmentReasonOf } from './session-result';

describe('the session result', () => {
  it('has every key from the start, null where nothing is known', () => {
    const r = emptySessionResult({ run: 'r', store: 's', status: 'segment', exit_code: 75, elapsedMs: 1234 });
    expect(r).toMatchObject({ ok: true, segment_stop: true, elapsed_s: 1.2, pushed_steps: [], micro_batch: null });
    expect(Object.values(r).filter((v) => v === undefined)).toEqual([]);
    expect(emptySessionResult({ run: 'r', store: 's', status: 'failed', exit_code: 3, elapsedMs: 0 }).ok).toBe(false);
  });

  it("words supervise()'s stop reasons in one vocabulary", () => {
    expect(segmentReasonOf('time limit 1m reached')).toBe('time-limit');
    expect(segmentReasonOf('the trainer got SIGKILL')).toBe('external-signal');
    expect(segmentReasonOf('the trainer exited 0 before its horizon')).toBe('before-horizon');
    expect(segmentReasonOf('received SIGHUP')).toBe('SIGHUP');
    expect(segmentReasonOf('aborted')).toBe('signal');
  });

  it('gives m, a and the line only with a global batch', () => {
    const facts = { globalBatchSize: 32, microBatchSize: 4, gradAccum: 4, worldSize: 2, oomStepDowns: [] };
    expect(microBatchFields(facts)).toEqual({
      micro_batch_size: 4,
      grad_accum: 4,
      micro_batch: '4 × 4 × 2 ranks = 32',
      oom_step_downs: [],
    });
    expect(microBatchFields({ ...facts, globalBatchSize: null }).micro_batch).toBeNull();
  });

  it("places the trainer tree's peak at its step, and its budget's source only with a budget", () => {
    const m = {
      peak_bytes: 100,
      peak_step: null,
      budget_bytes: 150,
      headroom_bytes: 50,
      max_memory_bytes: 90,
      max_memory_passed_step: 3,
      max_memory_passed: true,
      method: 'tree-rss',
      samples: 4,
    };
    expect(memoryReportOf(m, 'flag')).toEqual({
      peak_bytes: 100,
      peak_at: 'before the first reported step',
      peak_step: null,
      budget_bytes: 150,
      budget_source: 'flag',
      headroom_bytes: 50,
      max_memory_bytes: 90,
      max_memory_passed_at: 'step 3',
      method: 'tree-rss',
    });
    expect(memoryReportOf({ ...m, budget_bytes: null, peak_bytes: null }, 'flag')).toMatchObject({
      budget_source: null,
      method: 'unavailable',
      peak_at: null,
    });
    expect(memoryReportOf(null, 'flag')).toBeNull();
  });
});
