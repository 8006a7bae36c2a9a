import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { BudgetPlanError } from './errors';
import { planForBudget } from './plan-for-budget';
import { predictPeakBytes } from './predict-peak-bytes';
import type { BudgetBlock } from './types';

const MiB = 1024 ** 2;
const blocks = (sizesMiB: number[]): BudgetBlock[] =>
  sizesMiB.map((s, i) => ({ name: `h.${i}`, activationBytes: s * MiB }));

describe('planForBudget', () => {
  test('nothing to recompute when the un-checkpointed step fits', () => {
    const plan = planForBudget({
      blocks: blocks([100, 100, 100]),
      baselineBytes: 50 * MiB,
      memoryBudgetBytes: 400 * MiB,
    });
    expect(plan).toEqual({ recompute: [], predictedPeakBytes: 350 * MiB, fits: true });
  });

  test('picks the largest blocks first and returns them in forward order', () => {
    // total 100+300+200+50 = 650, baseline 100 → 750 without recompute.
    // k=2 {h.1 300, h.2 200}: 100 + 150 + 300 = 550; k=3 adds h.0: 100 + 50 + 300 = 450.
    const input = blocks([100, 300, 200, 50]);
    expect(planForBudget({ blocks: input, baselineBytes: 100 * MiB, memoryBudgetBytes: 600 * MiB })).toEqual({
      recompute: ['h.1', 'h.2'],
      predictedPeakBytes: 550 * MiB,
      fits: true,
    });
    expect(planForBudget({ blocks: input, baselineBytes: 100 * MiB, memoryBudgetBytes: 500 * MiB })).toEqual({
      recompute: ['h.0', 'h.1', 'h.2'],
      predictedPeakBytes: 450 * MiB,
      fits: true,
    });
  });

  test('a budget exactly at the predicted peak fits', () => {
    const plan = planForBudget({ blocks: blocks([10, 10, 10, 10]), baselineBytes: 0, memoryBudgetBytes: 30 * MiB });
    // k=2: 20 kept + 10 = 30
    expect(plan).toEqual({ recompute: ['h.0', 'h.1'], predictedPeakBytes: 30 * MiB, fits: true });
  });

  test('when nothing fits: fits=false and the smallest set reaching the lowest peak', () => {
    const plan = planForBudget({
      blocks: [...blocks([10, 40, 20]), { name: 'h.3', activationBytes: 0 }],
      baselineBytes: 100 * MiB,
      memoryBudgetBytes: 120 * MiB,
    });
    // all recomputed: 100 + 0 + 40 = 140 > 120; h.3 (0 bytes) is not needed to reach it
    expect(plan).toEqual({ recompute: ['h.0', 'h.1', 'h.2'], predictedPeakBytes: 140 * MiB, fits: false });
  });

  test('ties in activation bytes go to the cheaper recompute, then to blocks with a measured cost', () => {
    const input: BudgetBlock[] = [
      { name: 'h.0', activationBytes: 8, recomputeCostMs: 5 },
      { name: 'h.1', activationBytes: 8 },
      { name: 'h.2', activationBytes: 8, recomputeCostMs: 2 },
      { name: 'h.3', activationBytes: 8, recomputeCostMs: 3 },
    ];
    // k=2 needed: 16 kept + 8 = 24
    expect(planForBudget({ blocks: input, baselineBytes: 0, memoryBudgetBytes: 24 }).recompute).toEqual(['h.2', 'h.3']);
    expect(planForBudget({ blocks: input, baselineBytes: 0, memoryBudgetBytes: 16 }).recompute).toEqual([
      'h.0',
      'h.2',
      'h.3',
    ]);
  });

  test('predictedPeakBytes agrees with predictPeakBytes', () => {
    const input = blocks([7, 3, 9, 1, 4]);
    const plan = planForBudget({ blocks: input, baselineBytes: 5 * MiB, memoryBudgetBytes: 15 * MiB });
    expect(plan.predictedPeakBytes).toBe(
      predictPeakBytes({ blocks: input, baselineBytes: 5 * MiB, recompute: plan.recompute }),
    );
  });

  test('minimal in count: brute force over every subset agrees (n ≤ 8)', () => {
    const arb = fc.record({
      sizes: fc.array(fc.integer({ min: 0, max: 1000 }), { minLength: 0, maxLength: 8 }),
      costs: fc.array(fc.option(fc.integer({ min: 0, max: 50 }), { nil: undefined }), { minLength: 8, maxLength: 8 }),
      baseline: fc.integer({ min: 0, max: 2000 }),
      budget: fc.integer({ min: 1, max: 8000 }),
    });
    fc.assert(
      fc.property(arb, ({ sizes, costs, baseline, budget }) => {
        const input: BudgetBlock[] = sizes.map((s, i) => ({
          name: `h.${i}`,
          activationBytes: s,
          recomputeCostMs: costs[i],
        }));
        const plan = planForBudget({ blocks: input, baselineBytes: baseline, memoryBudgetBytes: budget });
        let minFitting = Infinity;
        let lowestPeak = Infinity;
        for (let mask = 0; mask < 1 << input.length; mask += 1) {
          const recompute = input.filter((_, i) => mask & (1 << i)).map((b) => b.name);
          const peak = predictPeakBytes({ blocks: input, baselineBytes: baseline, recompute });
          lowestPeak = Math.min(lowestPeak, peak);
          if (peak <= budget) minFitting = Math.min(minFitting, recompute.length);
        }
        const peak = predictPeakBytes({ blocks: input, baselineBytes: baseline, recompute: plan.recompute });
        expect(plan.predictedPeakBytes).toBe(peak);
        if (minFitting === Infinity) {
          expect(plan.fits).toBe(false);
          expect(plan.predictedPeakBytes).toBe(lowestPeak);
        } else {
          expect(plan.fits).toBe(true);
          expect(peak).toBeLessThanOrEqual(budget);
          expect(plan.recompute).toHaveLength(minFitting);
        }
        expect(plan.recompute.length).not.toBe(1);
      }),
      { numRuns: 300 },
    );
  });

  test.each([
    [{ blocks: blocks([1]), baselineBytes: -1, memoryBudgetBytes: 10 }, 'baselineBytes'],
    [{ blocks: blocks([1]), baselineBytes: 0, memoryBudgetBytes: 0 }, 'memoryBudgetBytes'],
    [{ blocks: blocks([1]), baselineBytes: 0, memoryBudgetBytes: Number.NaN }, 'memoryBudgetBytes'],
    [
      { blocks: [{ name: 'h.0', activationBytes: -5 }], baselineBytes: 0, memoryBudgetBytes: 10 },
      'blocks[0].activationBytes',
    ],
    [{ blocks: [{ name: '', activationBytes: 5 }], baselineBytes: 0, memoryBudgetBytes: 10 }, 'blocks[0].name'],
    [{ blocks: [...blocks([1]), ...blocks([2])], baselineBytes: 0, memoryBudgetBytes: 10 }, 'blocks[1].name'],
    [
      { blocks: [{ name: 'h.0', activationBytes: 5, recomputeCostMs: -1 }], baselineBytes: 0, memoryBudgetBytes: 10 },
      'blocks[0].recomputeCostMs',
    ],
  ])('bad input throws BudgetPlanError naming the field (%#)', (params, field) => {
    let caught: unknown;
    try {
      planForBudget(params);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(BudgetPlanError);
    expect((caught as BudgetPlanError).field).toBe(field);
    expect((caught as BudgetPlanError).code).toBe('SOUP_GRAD_CKPT_BAD_BUDGET_INPUT');
    expect((caught as BudgetPlanError).message.startsWith(field)).toBe(true);
  });

  test('predictPeakBytes refuses a name that is not a block', () => {
    expect(() => predictPeakBytes({ blocks: blocks([1]), baselineBytes: 0, recompute: ['h.9'] })).toThrow(
      BudgetPlanError,
    );
  });
});
