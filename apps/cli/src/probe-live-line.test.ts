// On a TTY the probe's live line names the batch being tried, for as long as that trial runs.
import type { ProbeTrialOutcome } from '@soup/cuda-probe';
import { describe, expect, it } from 'vitest';
import { resolveBatch } from '@soup/plan';
import { planIo } from './_batch-lines';
import { makeContext } from './_context';

describe('resolveBatch on a TTY', () => {
  it('while a trial runs, the redrawn line says which batch is being tried', async () => {
    const chunks: string[] = [];
    const tty = { write: (s: string) => void chunks.push(s), isTTY: true, columns: 100 };
    const ctx = makeContext({ stdout: tty, stderr: tty, env: { NO_COLOR: '1' }, cwd: '/tmp' }, false);
    const seen: Array<[number, string]> = [];
    const capacity = 20;
    const probe = async (batchSize: number): Promise<ProbeTrialOutcome> => {
      // a long step: the line is read half-way through it, as a user would
      await new Promise((r) => setTimeout(r, 1300));
      seen.push([batchSize, chunks.join('').split('\r\x1b[K').pop()!]);
      const fits = batchSize <= capacity;
      return { fits, batchSize, reason: fits ? 'fit' : 'oom', measurement: 'sampled-rss', detail: '', ms: 1300 };
    };
    const r = await resolveBatch({
      ...planIo(ctx),
      probe,
      key: {
        base: 'soup-i16/live-line',
        maxLength: 16,
        quantization: 'none',
        loraR: 0,
        gpuName: 'cpu',
        gpuMemoryGb: 1,
      },
      start: 8,
      ceiling: 32,
      noCache: true,
    });
    expect(r.batchSize).toBe(capacity);
    expect(seen.length).toBeGreaterThanOrEqual(3);
    for (const [batch, line] of seen)
      expect(line, `while batch ${batch} ran`).toMatch(new RegExp(`trying batch ${batch}  trial \\d+ of ~\\d+`));
  }, 60_000);
});
