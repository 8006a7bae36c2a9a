// commandFit reads a micro-batch search as tuneExec's fit: m, its trial there, and the search's other trials that
// fitted without doubt and were timed (the walk's 1-step runs at a smaller m).
import { describe, expect, it } from 'vitest';
import { commandFit } from './command-adapter';

describe('commandFit', () => {
  it("keeps the search's other timed trials that fitted without doubt, by micro-batch", async () => {
    const trial = (batch_size: number, result: string, more: Record<string, unknown> = {}) => ({
      batch_size,
      result,
      peak_bytes: batch_size * 100,
      run_ms: 1000 + batch_size,
      run_output_span_ms: 10 * batch_size,
      run_output_chars: 7,
      ...more,
    });
    const chosen = trial(4, 'fit');
    const fit = commandFit(async (cmd) => {
      expect(cmd).toBe('train --steps 1');
      return {
        batchSize: 4,
        source: 'probe',
        chosen,
        trials: [
          trial(1, 'fit'),
          trial(2, 'fit', { warning: 'it printed an out-of-memory error and exited 0' }),
          trial(8, 'over-budget'),
          trial(16, 'fit', { run_ms: undefined }),
          chosen,
        ],
      };
    });
    const a = await fit('train --steps {probe_steps}');
    expect(a).toMatchObject({ batchSize: 4, peakBytes: 400, oneStepMs: 1004, oneStepSpanMs: 40 });
    if (a.batchSize === null) throw new Error('no fit');
    expect([...(a.oneStepAt ?? new Map())]).toEqual([[1, { ms: 1001, spanMs: 10, outputChars: 7, peakBytes: 100 }]]);
  });
});
