import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { calibrateBudgetBlocks } from './calibrate-budget-blocks';
import { BudgetPlanError } from './errors';
import { planForBudget } from './plan-for-budget';
import { predictPeakBytes } from './predict-peak-bytes';

const MiB = 2 ** 20;
const equal = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `h.${i}`, staticBytes: 1 }));

describe('calibrateBudgetBlocks', () => {
  test('identical blocks: the difference split evenly over n − 1', () => {
    // off = base + 6a, full = base + a: a = 50/5 = 10 MiB, base = 160 − 60 = 100 MiB.
    const r = calibrateBudgetBlocks({ offPeakBytes: 160 * MiB, fullPeakBytes: 110 * MiB, blocks: equal(6) });
    expect(r).toEqual({
      blocks: equal(6).map(({ name }) => ({ name, activationBytes: 10 * MiB })),
      baselineBytes: 100 * MiB,
    });
    // and the planner on it: 130 MiB needs 160 − (k − 1)·10 ≤ 130, k = 4
    expect(planForBudget({ ...r, memoryBudgetBytes: 130 * MiB })).toEqual({
      recompute: ['h.0', 'h.1', 'h.2', 'h.3'],
      predictedPeakBytes: 130 * MiB,
      fits: true,
    });
  });

  test('unequal shares: proportional, largest block counted once in the full peak', () => {
    // shares 1:2:1 → Σs − max s = 2; off − full = 40 → k = 20: a = 20, 40, 20; baseline = 100 − 80 = 20.
    const r = calibrateBudgetBlocks({
      offPeakBytes: 100,
      fullPeakBytes: 60,
      blocks: [
        { name: 'a', staticBytes: 1 },
        { name: 'b', staticBytes: 2 },
        { name: 'c', staticBytes: 1 },
      ],
    });
    expect(r).toEqual({
      blocks: [
        { name: 'a', activationBytes: 20 },
        { name: 'b', activationBytes: 40 },
        { name: 'c', activationBytes: 20 },
      ],
      baselineBytes: 20,
    });
  });

  test('nothing to gain: one block, full ≥ off, or a single non-zero share', () => {
    const none = (blocks: { name: string; staticBytes: number }[], off: number, full: number) =>
      calibrateBudgetBlocks({ offPeakBytes: off, fullPeakBytes: full, blocks });
    expect(none(equal(1), 100, 50)).toEqual({ blocks: [{ name: 'h.0', activationBytes: 0 }], baselineBytes: 100 });
    expect(none(equal(4), 100, 120)).toEqual({
      blocks: equal(4).map(({ name }) => ({ name, activationBytes: 0 })),
      baselineBytes: 100,
    });
    expect(
      none(
        [
          { name: 'a', staticBytes: 5 },
          { name: 'b', staticBytes: 0 },
        ],
        100,
        50,
      ).blocks.map((b) => b.activationBytes),
    ).toEqual([0, 0]);
    expect(none([], 100, 50)).toEqual({ blocks: [], baselineBytes: 100 });
  });

  test('predictPeakBytes reproduces both measurements, for every input (within rounding)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 1e9 }), { minLength: 2, maxLength: 24 }),
        fc.integer({ min: 0, max: 2 ** 40 }),
        fc.integer({ min: 0, max: 2 ** 40 }),
        (shares, a, b) => {
          const [fullPeakBytes, offPeakBytes] = a <= b ? [a, b] : [b, a];
          const blocks = shares.map((s, i) => ({ name: `h.${i}`, staticBytes: s }));
          const r = calibrateBudgetBlocks({ offPeakBytes, fullPeakBytes, blocks });
          const names = blocks.map((x) => x.name);
          expect(r.blocks.every((x) => Number.isInteger(x.activationBytes) && x.activationBytes >= 0)).toBe(true);
          const off = predictPeakBytes({ ...r, recompute: [] });
          const full = predictPeakBytes({ ...r, recompute: names });
          const sum = shares.reduce((x, y) => x + y, 0);
          if (sum - Math.max(...shares) > 0 && offPeakBytes > fullPeakBytes && r.baselineBytes > 0) {
            expect(off).toBe(offPeakBytes);
            expect(Math.abs(full - fullPeakBytes)).toBeLessThanOrEqual(shares.length);
          } else if (sum - Math.max(...shares) <= 0 || offPeakBytes === fullPeakBytes) {
            expect(off).toBe(offPeakBytes);
            expect(full).toBe(offPeakBytes);
          }
        },
      ),
    );
  });

  test.each([
    [{ offPeakBytes: -1, fullPeakBytes: 0, blocks: equal(2) }, 'offPeakBytes'],
    [{ offPeakBytes: 1, fullPeakBytes: Number.NaN, blocks: equal(2) }, 'fullPeakBytes'],
    [{ offPeakBytes: 1, fullPeakBytes: 0, blocks: [...equal(1), ...equal(1)] }, 'blocks[1].name'],
    [{ offPeakBytes: 1, fullPeakBytes: 0, blocks: [{ name: 'h.0', staticBytes: Infinity }] }, 'blocks[0].staticBytes'],
    [{ offPeakBytes: 1, fullPeakBytes: 0, blocks: [{ name: '', staticBytes: 1 }] }, 'blocks[0].name'],
  ])('bad input throws BudgetPlanError naming the field (%#)', (params, field) => {
    expect(() => calibrateBudgetBlocks(params)).toThrow(BudgetPlanError);
    expect(() => calibrateBudgetBlocks(params)).toThrow(
      expect.objectContaining({
        field,
        code: 'SOUP_GRAD_CKPT_BAD_BUDGET_INPUT',
        message: expect.stringMatching(new RegExp(`^${field.replace(/[[\]]/g, '\\$&')}`)),
      }),
    );
  });
});
