import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { InvalidBatchOptionError, OutOfMemoryError } from './errors';
import { probeBatchSize } from './probe-batch-size';
import { refineTrialBound } from './_refine-bound';
import type { ProbeFn } from './types';

const MiB = 2 ** 20;

/** A fake device whose step peak is `peak(b)`: over the budget it completes but is refused (a peak gate), as the real probes do. */
function peakProbe(peak: (b: number) => number, budgetBytes: number): ProbeFn & { calls: number[] } {
  const calls: number[] = [];
  const probe: ProbeFn = async (b) => {
    calls.push(b);
    const p = peak(b);
    return { fits: p <= budgetBytes, peakBytes: p, budgetBytes, measurement: 'peak-rss' };
  };
  return Object.assign(probe, { calls });
}

type Model = { kind: 'linear' | 'step2' | 'step20' | 'quadratic'; a: number; c: number; q: number };
function peakOf(m: Model): (b: number) => number {
  const raw = (b: number) => m.a + m.c * b + m.q * b * b;
  if (m.kind === 'step2') return (b) => Math.ceil(raw(b) / (2 * MiB)) * 2 * MiB;
  if (m.kind === 'step20') return (b) => Math.ceil(raw(b) / (20 * MiB)) * 20 * MiB;
  return raw;
}

describe('predictive search', () => {
  test('a linear peak: start, proportional guess, predicted edge, edge + 1 — 4 trials, exact', async () => {
    const peak = (b: number) => 2048 * MiB + 20 * MiB * b; // edge at (12 GiB - 2 GiB) / 20 MiB = 512
    const probe = peakProbe(peak, 12 * 1024 * MiB);
    const r = await probeBatchSize(probe, { start: 8, ceiling: 1024, predict: true });
    expect(r.batchSize).toBe(512);
    expect(r.bound).toBe('exact');
    expect(probe.calls).toHaveLength(4);
    expect(probe.calls.slice(-2)).toEqual([512, 513]);
    expect(r.trials.slice(1).map((t) => t.phase)).toEqual(['predict', 'predict', 'predict']);
  });

  test('without measured peaks it makes the same calls as refine', async () => {
    for (const capacity of [1, 3, 17, 100, 700]) {
      const calls: Record<string, number[]> = { refine: [], predict: [] };
      for (const mode of ['refine', 'predict'] as const) {
        await probeBatchSize(
          async (b) => {
            calls[mode]!.push(b);
            if (b > capacity) throw new OutOfMemoryError('oom');
            return { fits: true };
          },
          { start: 8, ceiling: 1024, predict: mode === 'predict' },
        );
      }
      expect(calls.predict).toEqual(calls.refine);
    }
  });

  test('predict without refine is refused, naming the field', async () => {
    await expect(probeBatchSize(async () => ({ fits: true }), { start: 1, ceiling: 2, refine: false, predict: true })).rejects.toThrow(InvalidBatchOptionError);
  });

  test('property: over models and capacities it returns the exact edge, a size measured to fit, within the refine bound', async () => {
    // Today's bound: the most trials refine makes for this start and ceiling, over every capacity.
    const bound = (start: number, ceiling: number) => refineTrialBound(start, ceiling, 8);
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          kind: fc.constantFrom<Model['kind']>('linear', 'step2', 'step20', 'quadratic'),
          a: fc.integer({ min: 0, max: 8 * 1024 }).map((x) => x * MiB),
          c: fc.integer({ min: 1, max: 400 }).map((x) => (x * MiB) / 10),
          q: fc.integer({ min: 0, max: 50 }).map((x) => (x * MiB) / 1000),
        }),
        fc.integer({ min: 1, max: 2048 }), // edge the budget is placed at
        fc.integer({ min: 1, max: 64 }),
        fc.constantFrom(64, 256, 1024, 4096),
        async (model0, edgeAt, start, ceiling) => {
          const model: Model = { ...model0, q: model0.kind === 'quadratic' ? model0.q : 0 };
          const peak = peakOf(model);
          const budget = Math.floor(peak(edgeAt) + 0.5 * (peak(edgeAt + 1) - peak(edgeAt)));
          const st = Math.min(start, ceiling);
          const truth = (() => {
            let b = 0;
            while (b < ceiling && peak(b + 1) <= budget) b++;
            return b;
          })();
          const probe = peakProbe(peak, budget);
          if (truth === 0) {
            await expect(probeBatchSize(probe, { start: st, ceiling, predict: true })).rejects.toThrow(/Out of memory at batch size 1/);
            return;
          }
          const r = await probeBatchSize(probe, { start: st, ceiling, predict: true });
          expect(r.batchSize).toBe(truth);
          expect(r.trials.some((t) => t.batchSize === r.batchSize && t.fits)).toBe(true);
          expect(r.trials.length).toBeLessThanOrEqual(bound(st, ceiling));
          expect(bound(st, ceiling)).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(ceiling)) + 2);
          const refine = await probeBatchSize(peakProbe(peak, budget), { start: st, ceiling });
          expect(refine.batchSize).toBe(truth);
        },
      ),
      { numRuns: 400 },
    );
  });

  test('property: with ±3 % measurement noise (fixed per size) the answer fits and the next size does not, within the bound', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 1, max: 2 ** 30 }), fc.constantFrom(1, 8, 32), async (edgeAt, seed, start) => {
        const noise = (b: number) => Math.sin(b * 12.9898 + seed) * 0.03; // deterministic per size
        const peak = (b: number) => (2048 + 6 * b) * MiB * (1 + noise(b));
        const budget = (2048 + 6 * edgeAt + 3) * MiB;
        const fits = (b: number) => peak(b) <= budget;
        if (!fits(1)) return;
        const r = await probeBatchSize(peakProbe(peak, budget), { start, ceiling: 1024, predict: true });
        expect(fits(r.batchSize)).toBe(true);
        expect(r.batchSize === 1024 || !fits(r.batchSize + 1)).toBe(true);
        expect(r.trials.some((t) => t.batchSize === r.batchSize && t.fits)).toBe(true);
        expect(r.trials.length).toBeLessThanOrEqual(refineTrialBound(start, 1024, 8));
      }),
      { numRuns: 300 },
    );
  });
});
