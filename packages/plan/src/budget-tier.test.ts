import type { ChildProbeFn, ProbeTrialOutcome } from '@soup/cuda-probe';
import { describe, expect, it } from 'vitest';
import { planBudgetTier } from './budget-tier';

const MiB = 2 ** 20;

/** A fake device: peak = base + activations kept + the largest recomputed block's (live again in the backward). */
function fakeDevice(opts: { baseBytes: number; perBlockBytes: number; calls: string[][] }) {
  return (recompute: string[]): ChildProbeFn =>
    async (batchSize: number): Promise<ProbeTrialOutcome> => {
      opts.calls.push(recompute);
      const blocks = 6;
      const peakBytes =
        opts.baseBytes +
        (blocks - recompute.length) * opts.perBlockBytes +
        (recompute.length > 0 ? opts.perBlockBytes : 0);
      return {
        fits: true,
        batchSize,
        reason: 'fit',
        measurement: 'peak-rss',
        detail: 'fake',
        ms: 1,
        peakBytes,
        budgetBytes: 1e12,
      };
    };
}

describe('planBudgetTier', () => {
  const blocks = ['h.0', 'h.1', 'h.2', 'h.3', 'h.4', 'h.5'];
  it('recomputes the fewest blocks whose measured peak fits, for every budget', async () => {
    for (let budgetMiB = 100; budgetMiB <= 170; budgetMiB += 5) {
      const calls: string[][] = [];
      const plan = await planBudgetTier({
        probeWith: fakeDevice({ baseBytes: 100 * MiB, perBlockBytes: 10 * MiB, calls }),
        batchSize: 4,
        blocks,
        memoryBudgetBytes: budgetMiB * MiB,
      });
      expect(plan.peakOffBytes).toBe(160 * MiB);
      expect(plan.peakFullBytes).toBe(110 * MiB);
      // k blocks recomputed (k >= 2 saves anything): peak = 160 - (k - 1) · 10 MiB
      const needed = budgetMiB >= 160 ? 0 : budgetMiB >= 110 ? Math.ceil((160 - budgetMiB) / 10) + 1 : 6;
      expect(plan.recompute, `budget ${budgetMiB} MiB`).toHaveLength(needed);
      expect(plan.fits).toBe(budgetMiB >= 110);
      expect(plan.peakPlanBytes).toBe(needed === 0 ? 160 * MiB : 160 * MiB - (needed - 1) * 10 * MiB);
      if (plan.fits) expect(plan.peakPlanBytes).toBeLessThanOrEqual(budgetMiB * MiB);
      // Off and full are measured; a partial plan is confirmed by a third measured step.
      expect(calls.length).toBe(needed > 0 && needed < 6 ? 3 : 2);
    }
  });

  it('refuses when the device reports no peak', async () => {
    const probeWith = (): ChildProbeFn => async (batchSize) => ({
      fits: true,
      batchSize,
      reason: 'fit',
      measurement: 'exceptions-only',
      detail: 'driver cannot answer',
      ms: 1,
    });
    await expect(planBudgetTier({ probeWith, batchSize: 1, blocks, memoryBudgetBytes: MiB })).rejects.toMatchObject({
      code: 'SOUP_PLAN_BUDGET_UNMEASURED',
      message: expect.stringMatching(/budget needs measured peaks.*driver cannot answer/),
    });
  });
});
