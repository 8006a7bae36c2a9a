import { describe, expect, it } from 'vitest';
import { divisorsOf, formatMicroBatch, largestDivisorAtMost, nextMicroBatchSize, perRankBatch } from './divisors';
import { InvalidBatchOptionError, NoBatchFitsError, OutOfMemoryError } from './errors';
import { probeMicroBatchSize } from './probe-micro-batch-size';
import type { ProbeFn } from './types';

/** A device that fits every size up to `capacity`; records what was tried. */
function device(capacity: number): { probe: ProbeFn; tried: number[] } {
  const tried: number[] = [];
  return {
    tried,
    probe: async (b) => {
      tried.push(b);
      if (b > capacity) throw new OutOfMemoryError(`CUDA out of memory at ${b}`);
      return { fits: true };
    },
  };
}

describe('divisors', () => {
  it('lists, picks and steps down divisors of G (and G / worldSize)', () => {
    expect(divisorsOf(24)).toEqual([1, 2, 3, 4, 6, 8, 12, 24]);
    expect(divisorsOf(1)).toEqual([1]);
    expect(divisorsOf(49)).toEqual([1, 7, 49]);
    expect(largestDivisorAtMost(24, 10)).toBe(8);
    expect(largestDivisorAtMost(7, 3)).toBe(1);
    expect(largestDivisorAtMost(7, 0)).toBeNull();
    expect(nextMicroBatchSize({ globalBatchSize: 16, microBatchSize: 16 })).toBe(8);
    expect(nextMicroBatchSize({ globalBatchSize: 24, microBatchSize: 8 })).toBe(6);
    expect(nextMicroBatchSize({ globalBatchSize: 32, microBatchSize: 4, worldSize: 2 })).toBe(2);
    expect(nextMicroBatchSize({ globalBatchSize: 7, microBatchSize: 1 })).toBeNull();
    expect(perRankBatch(32, 4)).toBe(8);
    expect(() => perRankBatch(30, 4)).toThrow(/globalBatchSize 30 is not a multiple of worldSize 4/);
    expect(() => divisorsOf(0)).toThrow(InvalidBatchOptionError);
    expect(formatMicroBatch({ microBatchSize: 4, accumulation: 4 })).toBe('4 × 4 = 16');
    expect(formatMicroBatch({ microBatchSize: 4, accumulation: 4, worldSize: 2 })).toBe('4 × 4 × 2 ranks = 32');
  });
});

describe('probeMicroBatchSize', () => {
  it('G = 24 with a capacity of 10 picks m = 8, a = 3, trying divisors only', async () => {
    const d = device(10);
    const r = await probeMicroBatchSize(d.probe, { globalBatchSize: 24 });
    expect(r).toMatchObject({ microBatchSize: 8, accumulation: 3, bound: 'exact' });
    expect(d.tried).toEqual([24, 12, 6, 8]);
  });

  it(
    'G = 7 with a capacity of 3 picks m = 1, a = 7 (the only divisor that fits); capacity 0 refuses ' +
      'naming batch size 1',
    async () => {
      const r = await probeMicroBatchSize(device(3).probe, { globalBatchSize: 7 });
      expect(r).toMatchObject({ microBatchSize: 1, accumulation: 7, bound: 'exact' });
      await expect(probeMicroBatchSize(device(0).probe, { globalBatchSize: 7 })).rejects.toThrow(NoBatchFitsError);
      await expect(probeMicroBatchSize(device(0).probe, { globalBatchSize: 7 })).rejects.toThrow(
        /out of memory at batch size 1/,
      );
    },
  );

  it(
    'every G in 1..48, every capacity 0..G+1, every start: the largest divisor ≤ capacity, only ' +
      'divisors tried, each at most once',
    async () => {
      for (let G = 1; G <= 48; G++) {
        const divs = divisorsOf(G);
        const bound = 2 * Math.ceil(Math.log2(divs.length + 1)) + 2;
        for (let cap = 0; cap <= G + 1; cap++) {
          for (const start of [1, Math.max(1, Math.floor(G / 3)), G]) {
            const d = device(cap);
            const want = largestDivisorAtMost(G, cap);
            const run = probeMicroBatchSize(d.probe, { globalBatchSize: G, start });
            if (want === null) await expect(run).rejects.toThrow(NoBatchFitsError);
            else expect((await run).microBatchSize, `G=${G} cap=${cap} start=${start}`).toBe(want);
            expect(d.tried.every((b) => G % b === 0)).toBe(true);
            expect(new Set(d.tried).size).toBe(d.tried.length);
            expect(d.tried.length, `G=${G} cap=${cap} start=${start}: ${d.tried.join(',')}`).toBeLessThanOrEqual(bound);
          }
        }
      }
    },
  );

  it('world size: divisors of G / N; a ceiling caps the candidates (bound capped)', async () => {
    const d = device(100);
    const r = await probeMicroBatchSize(d.probe, { globalBatchSize: 64, worldSize: 4 });
    expect(r).toMatchObject({ microBatchSize: 16, accumulation: 1, bound: 'capped' });
    const c = await probeMicroBatchSize(device(100).probe, { globalBatchSize: 24, ceiling: 10 });
    expect(c).toMatchObject({ microBatchSize: 8, accumulation: 3, bound: 'capped' });
  });

  it('headroom 10 %: a fit whose peak is above 90 % of the budget does not count', async () => {
    // peak = m × 10 bytes, budget 100: m = 8 (80 B) is within 90 %, m = 9 (90 B) is not above it, m = 12 (120 B) is
    // over.
    const probe: ProbeFn = async (b) => ({ fits: b * 10 <= 100, peakBytes: b * 10, budgetBytes: 100 });
    const plain = await probeMicroBatchSize(probe, { globalBatchSize: 20 });
    expect(plain.microBatchSize).toBe(10);
    const kept = await probeMicroBatchSize(probe, { globalBatchSize: 20, headroom: 0.1 });
    expect(kept.microBatchSize).toBe(5);
    const t = kept.trials.find((x) => x.batchSize === 10)!;
    expect(t).toMatchObject({
      fits: false,
      result: 'not-fit',
      detail: expect.stringMatching(/above 90 % of the budget/),
    });
    await expect(probeMicroBatchSize(probe, { globalBatchSize: 20, headroom: 1 })).rejects.toThrow(
      /headroom must be a fraction/,
    );
  });
});

/** A device with a linear peak (base + perSample × b) held to `budget`; records what was tried. */
function linearDevice(base: number, perSample: number, budget: number): { probe: ProbeFn; tried: number[] } {
  const tried: number[] = [];
  return {
    tried,
    probe: async (b) => {
      tried.push(b);
      const peakBytes = base + perSample * b;
      return { fits: peakBytes <= budget, peakBytes, budgetBytes: budget };
    },
  };
}

describe('probeMicroBatchSize: floor (a lighter configuration fits up to it)', () => {
  it('searches only the divisors above the floor, and says when none of them fits', async () => {
    const d = device(20);
    const r = await probeMicroBatchSize(d.probe, {
      globalBatchSize: 32,
      floor: 8,
      start: 8,
    });
    expect(r).toMatchObject({ microBatchSize: 16, bound: 'exact' });
    expect(d.tried.every((b) => b > 8)).toBe(true);
    const none = device(12);
    const err = await probeMicroBatchSize(none.probe, {
      globalBatchSize: 32,
      floor: 8,
      start: 8,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NoBatchFitsError);
    expect((err as NoBatchFitsError).smallestBatchSize).toBe(16);
    expect(none.tried).toEqual([16]);
  });

  it('refuses a floor with nothing above it, naming the field', async () => {
    await expect(probeMicroBatchSize(device(64).probe, { globalBatchSize: 32, floor: 32 })).rejects.toThrow(/floor 32/);
    await expect(probeMicroBatchSize(device(64).probe, { globalBatchSize: 32, floor: -1 })).rejects.toThrow(
      /floor must be a non-negative integer/,
    );
  });
});

describe('probeMicroBatchSize: fromBelow (small trials first, the edge predicted from their peaks)', () => {
  it(
    'G = 32, 64 MiB a sample over a 43 MiB base, budget 423 MiB: 1, 2, then the predicted 4; 8 is not ' +
      'tried (predicted 555 MiB)',
    async () => {
      const MiB = 2 ** 20;
      const d = linearDevice(43 * MiB, 64 * MiB, 423 * MiB);
      const r = await probeMicroBatchSize(d.probe, {
        globalBatchSize: 32,
        fromBelow: { margin: 0.1 },
      });
      expect(r).toMatchObject({
        microBatchSize: 4,
        accumulation: 8,
        bound: 'predicted',
      });
      expect(d.tried).toEqual([1, 2, 4]);
      expect(r.trials.map((t) => t.phase)).toEqual(['double', 'double', 'predict']);
    },
  );

  it('tries the next divisor when the line puts it within the margin of the budget, and proves the edge', async () => {
    // base 100, 50 a sample, budget 520: 8 → 500 fits; 16 → 900 is far over; with budget 880, 16 → 900 is within 10 %.
    const near = linearDevice(100, 50, 880);
    const r = await probeMicroBatchSize(near.probe, {
      globalBatchSize: 32,
      fromBelow: { margin: 0.1 },
    });
    expect(r).toMatchObject({ microBatchSize: 8, bound: 'exact' });
    expect(near.tried).toEqual([1, 2, 8, 16]);
  });

  it('a peak the line under-predicts: the failed trial is bisected down, never answered from the line', async () => {
    // Peaks grow faster than the line from 1 and 2 says (a quadratic term): the line puts 16 under
    // the budget, its trial fails (1,796 > 600), and 8 is tried next (564: fits) — the answer is a fit, proven exact.
    const tried: number[] = [];
    const probe: ProbeFn = async (b) => {
      tried.push(b);
      const peakBytes = 100 + 10 * b + 6 * b * b;
      return { fits: peakBytes <= 600, peakBytes, budgetBytes: 600 };
    };
    const r = await probeMicroBatchSize(probe, {
      globalBatchSize: 32,
      fromBelow: { margin: 0.1 },
    });
    expect(r).toMatchObject({ microBatchSize: 8, bound: 'exact' });
    expect(tried).toEqual([1, 2, 16, 8]);
  });

  it('without measured peaks it gallops up one divisor at a time; nothing fitting throws', async () => {
    const d = device(5);
    const r = await probeMicroBatchSize(d.probe, {
      globalBatchSize: 24,
      fromBelow: { margin: 0.1 },
    });
    expect(r).toMatchObject({ microBatchSize: 4, bound: 'exact' });
    expect(d.tried).toEqual([1, 2, 3, 4, 6]);
    await expect(
      probeMicroBatchSize(device(0).probe, {
        globalBatchSize: 24,
        fromBelow: { margin: 0.1 },
      }),
    ).rejects.toBeInstanceOf(NoBatchFitsError);
  });
});

describe('probeMicroBatchSize: predictStop (the gallop up skips a divisor the line puts well over the budget)', () => {
  it(
    'from 8: 8 and 16 fit, the line puts 32 at 420 against 300 (+10 %): not tried, bound predicted; ' +
      'at budget 400 it is tried',
    async () => {
      const d = linearDevice(100, 10, 300);
      const r = await probeMicroBatchSize(d.probe, { globalBatchSize: 32, start: 8, predictStop: { margin: 0.1 } });
      expect(r).toMatchObject({ microBatchSize: 16, bound: 'predicted' });
      expect(d.tried).toEqual([8, 16]);
      const near = linearDevice(100, 10, 400);
      const n = await probeMicroBatchSize(near.probe, { globalBatchSize: 32, start: 8, predictStop: { margin: 0.1 } });
      expect(n).toMatchObject({ microBatchSize: 16, bound: 'exact' });
      expect(near.tried).toEqual([8, 16, 32]);
      const plain = linearDevice(100, 10, 300);
      await probeMicroBatchSize(plain.probe, { globalBatchSize: 32, start: 8 });
      expect(plain.tried).toEqual([8, 16, 32]);
    },
  );
});
