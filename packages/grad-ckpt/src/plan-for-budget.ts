import { checkBlocks, checkBytes } from './_budget-input';
import type { BudgetBlock } from './types';

/** Parameters of {@link planForBudget}. */
export interface PlanForBudgetParams {
  /** Every checkpointable block (e.g. `h.0 … h.11`) with the activation bytes measured in one un-checkpointed step. */
  blocks: readonly BudgetBlock[];
  /** Peak bytes of the step that do not depend on the plan (weights, grads, optimizer state, workspace). */
  baselineBytes: number;
  /** The peak the step may reach, in bytes. */
  memoryBudgetBytes: number;
}

/** What {@link planForBudget} chose. */
export interface BudgetPlan {
  /** Blocks to recompute, in the order they appear in `blocks` (forward order). */
  recompute: string[];
  /** {@link predictPeakBytes} of this plan. */
  predictedPeakBytes: number;
  /**
   * `predictedPeakBytes <= memoryBudgetBytes`. When false, `recompute` is the smallest set reaching the lowest possible
   * peak.
   */
  fits: boolean;
}

/**
 * `tier: 'budget'`: the smallest set of blocks to recompute so that the predicted peak
 * ({@link predictPeakBytes}: baseline + kept activations + the largest recomputed block's
 * activations) fits `memoryBudgetBytes`.
 *
 * Rule: sort blocks by `activationBytes`, largest first (ties: lower `recomputeCostMs` first,
 * blocks without a cost after blocks with one, then input order) and take the shortest prefix
 * that fits. This is minimal in count: for a set R of size k the saving over no recompute is
 * `Σ_R a − max_R a`, the sum of R's k−1 smallest members; R's i-th largest member is at most
 * the i-th largest of all blocks, so the k largest blocks save the most of any k-set, and the
 * saving of the k largest never shrinks as k grows. The first k whose k largest fit is
 * therefore the fewest blocks any fitting plan can have. (A single recomputed block saves
 * nothing under this bound, so plans have 0 or ≥ 2 blocks.)
 *
 * @throws {BudgetPlanError} naming the field on a bad input (negative, non-finite, duplicate name).
 */
export function planForBudget(params: PlanForBudgetParams): BudgetPlan {
  const { blocks, baselineBytes, memoryBudgetBytes } = params;
  checkBlocks(blocks);
  checkBytes('baselineBytes', baselineBytes, false);
  checkBytes('memoryBudgetBytes', memoryBudgetBytes, true);

  const order = blocks
    .map((block, index) => ({ block, index }))
    .sort((x, y) => {
      if (x.block.activationBytes !== y.block.activationBytes) return y.block.activationBytes - x.block.activationBytes;
      const cx = x.block.recomputeCostMs ?? Infinity;
      const cy = y.block.recomputeCostMs ?? Infinity;
      if (cx !== cy) return cx < cy ? -1 : 1;
      return x.index - y.index;
    });

  const total = blocks.reduce((sum, b) => sum + b.activationBytes, 0);
  const largest = order[0]?.block.activationBytes ?? 0;
  // peak(k) = baseline + total − prefix(k) + (k > 0 ? largest : 0), non-increasing in k.
  let bestK = 0;
  let bestPeak = baselineBytes + total;
  let prefix = 0;
  for (let k = 0; k <= order.length; k += 1) {
    if (k > 0) prefix += order[k - 1]!.block.activationBytes;
    const peak = baselineBytes + total - prefix + (k > 0 ? largest : 0);
    if (peak < bestPeak) {
      bestPeak = peak;
      bestK = k;
    }
    if (peak <= memoryBudgetBytes) {
      bestPeak = peak;
      bestK = k;
      break;
    }
  }
  const chosen = new Set(order.slice(0, bestK).map((o) => o.index));
  return {
    recompute: blocks.filter((_, i) => chosen.has(i)).map((b) => b.name),
    predictedPeakBytes: bestPeak,
    fits: bestPeak <= memoryBudgetBytes,
  };
}
