import { describe, expect, it } from 'vitest';
import { trialLine } from './_batch-lines';
import { makeContext } from './_context';

const MiB = 1024 * 1024;

describe('trialLine at the edge of the budget', () => {
  it('a fitting and a failing size side by side read different peaks', () => {
    const out = { write: () => undefined, isTTY: false };
    const ctx = makeContext({ stdout: out, stderr: out, env: { NO_COLOR: '1' }, cwd: '/tmp' }, false);
    const trial = { phase: 'refine', ms: 1200, detail: null, measurement: 'sampled-rss', budget_bytes: 300 * MiB };
    const fits = trialLine({ ...trial, batch_size: 310, result: 'fit', peak_bytes: 299.7 * MiB }, ctx);
    const over = trialLine({ ...trial, batch_size: 313, result: 'over-budget', peak_bytes: 300.4 * MiB }, ctx);
    expect(fits).toContain('peak 299.7 MiB / budget 300.0 MiB');
    expect(over).toContain('peak 300.4 MiB / budget 300.0 MiB');
  });
});
