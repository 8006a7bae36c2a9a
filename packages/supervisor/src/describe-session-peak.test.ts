import { describe, expect, it } from 'vitest';
import { describeSessionPeak, describeTuningPeak } from './describe-session-peak';
import type { SessionPeakReport } from './session-result';

const MiB = 2 ** 20;
const report = (tuning?: SessionPeakReport['tuning']): SessionPeakReport => ({
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

describe('describeSessionPeak', () => {
  it('the peak, how it was read, the budget and its source, --max-memory; unknown without a reading', () => {
    expect(describeSessionPeak({ ...report(), budget_source: 'reachable' })).toBe(
      "memory: session peak 300 MiB (the trainer's whole process tree, sum of RSS, sampled) at step 3; budget " +
        '400 MiB (reachable at the start), headroom 100 MiB',
    );
    expect(
      describeSessionPeak({
        ...report(),
        budget_source: 'flag',
        method: 'cuda-per-process',
        max_memory_bytes: 250 * MiB,
        max_memory_passed_at: 'step 2',
      }),
    ).toBe(
      "memory: session peak 300 MiB (GPU memory of the trainer's processes, nvidia-smi) at step 3; budget 400 MiB " +
        '(--budget), headroom 100 MiB; passed --max-memory 250 MiB at step 2',
    );
    // soup.yaml's budget is said as such: the line once called it "reachable at the start", which it was not.
    expect(describeSessionPeak(report())).toBe(
      "memory: session peak 300 MiB (the trainer's whole process tree, sum of RSS, sampled) at step 3; budget " +
        "400 MiB (soup.yaml's training.memory_budget), headroom 100 MiB",
    );
    expect(describeSessionPeak(null)).toBe(
      "memory: the trainer's peak is unknown (no reading of its process tree succeeded)",
    );
  });
});

describe("the tuner's peak, measured apart", () => {
  it("reports the tuner's peak beside the trainer's, never counted in it, and nothing without one", () => {
    expect(
      describeTuningPeak(report({ peak_bytes: 671 * MiB, in_session_peak: false, resident_at_reset_bytes: null })),
    ).toBe(
      "; before it, the tuner's timing sessions took soup's own process to 671 MiB (measured apart: the trainer " +
        'is a process of its own)',
    );
    expect(describeTuningPeak(report(undefined))).toBe('');
    expect(describeTuningPeak(null)).toBe('');
  });
});
