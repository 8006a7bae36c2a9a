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
      expect(line, `while batch ${batch} ran`).toMatch(new RegExp(`trying batch ${batch}  trial \\d+`));
  }, 60_000);

  it('says what the trials so far prove, which only narrows; no count of trials to go that could grow', async () => {
    const chunks: string[] = [];
    const tty = { write: (s: string) => void chunks.push(s), isTTY: true, columns: 120 };
    const ctx = makeContext({ stdout: tty, stderr: tty, env: { NO_COLOR: '1' }, cwd: '/tmp' }, false);
    const lines: string[] = [];
    const capacity = 20;
    const probe = async (batchSize: number): Promise<ProbeTrialOutcome> => {
      // The bar first draws after 1 s; later lines redraw within 80 ms.
      await new Promise((r) => setTimeout(r, lines.length === 0 ? 1300 : 400));
      lines.push(chunks.join('').split('\r\x1b[K').pop()!);
      const fits = batchSize <= capacity;
      return { fits, batchSize, reason: fits ? 'fit' : 'oom', measurement: 'sampled-rss', detail: '', ms: 400 };
    };
    const r = await resolveBatch({
      ...planIo(ctx),
      probe,
      key: { base: 'soup-i43/narrows', maxLength: 16, quantization: 'none', loraR: 0, gpuName: 'cpu', gpuMemoryGb: 1 },
      start: 8,
      ceiling: 32,
      noCache: true,
    });
    expect(r.batchSize).toBe(capacity);
    // 8+ 16+ 32- then the refinement: more trials than log2(ceiling / start) + 2, where the old estimate grew.
    expect(lines.length).toBeGreaterThan(4);
    let lastTotal = Number.POSITIVE_INFINITY;
    let fit = 0;
    let failed = Number.POSITIVE_INFINITY;
    // Nothing is proven while the first trial runs.
    expect(lines[0]).toMatch(/trial 1$/);
    for (const line of lines.slice(1)) {
      const total = /of ~(\d+)/.exec(line);
      if (total) {
        expect(Number(total[1]), line).toBeLessThanOrEqual(lastTotal);
        lastTotal = Number(total[1]);
      }
      const proven = /\((?:(\d+) fits|none fit yet)(?:, (\d+) does not)?\)/.exec(line);
      expect(proven, line).not.toBeNull();
      const f = proven?.[1] === undefined ? 0 : Number(proven[1]);
      const x = proven?.[2] === undefined ? Number.POSITIVE_INFINITY : Number(proven[2]);
      expect(f, line).toBeGreaterThanOrEqual(fit);
      expect(x, line).toBeLessThanOrEqual(failed);
      fit = f;
      failed = x;
    }
    expect(lines.at(-1)).toMatch(/\(20 fits, 21 does not\)|\(20 fits, 22 does not\)/);
  }, 60_000);
});
