import { checkBlocks, checkBytes } from './_budget-input';
import type { BudgetBlock } from './types';

/** Parameters of {@link calibrateBudgetBlocks}. */
export interface CalibrateBudgetBlocksParams {
  /** Measured peak of the step with nothing recomputed, in bytes. */
  offPeakBytes: number;
  /** Measured peak of the same step with every block recomputed, in bytes. */
  fullPeakBytes: number;
  /**
   * Every checkpointable block in forward order, with its static share: what recomputing it
   * removes from the saved activations by a static count (only the ratios matter; equal shares
   * for identical blocks).
   */
  blocks: readonly { name: string; staticBytes: number }[];
}

/** Inputs of {@link planForBudget} / {@link predictPeakBytes} derived by {@link calibrateBudgetBlocks}. */
export interface CalibratedBudgetBlocks {
  /** Each block with its activation bytes (whole bytes), in the input order. */
  blocks: BudgetBlock[];
  /** Peak bytes that no plan changes: `offPeakBytes − Σ activationBytes` (at least 0). */
  baselineBytes: number;
}

/**
 * Turns two measured peaks into the budget planner's model. The difference between the
 * un-checkpointed and the fully checkpointed step is attributed to the blocks in proportion to
 * their static shares, scaled so that `predictPeakBytes` reproduces both measurements (up to
 * rounding to whole bytes):
 *
 * `a_i = k·s_i`, `k = (off − full) / (Σs − max s)`, `baselineBytes = off − Σa`
 *
 * (peak(nothing) = baseline + Σa = off; peak(every block) = baseline + max a = full). With one
 * block, shares that sum to their maximum, or `full ≥ off`, no block is worth recomputing: every
 * `activationBytes` is 0 and `baselineBytes` is `off`.
 *
 * @throws {BudgetPlanError} naming the field: a peak or share that is not a finite number ≥ 0, an
 *   empty or duplicate block name
 */
export function calibrateBudgetBlocks(params: CalibrateBudgetBlocksParams): CalibratedBudgetBlocks {
  const { offPeakBytes, fullPeakBytes, blocks } = params;
  checkBytes('offPeakBytes', offPeakBytes, false);
  checkBytes('fullPeakBytes', fullPeakBytes, false);
  checkBlocks(blocks, 'staticBytes');
  const sumShares = blocks.reduce((s, b) => s + b.staticBytes, 0);
  const maxShare = Math.max(0, ...blocks.map((b) => b.staticBytes));
  const scale =
    blocks.length > 1 && sumShares - maxShare > 0 && offPeakBytes > fullPeakBytes
      ? (offPeakBytes - fullPeakBytes) / (sumShares - maxShare)
      : 0;
  const out: BudgetBlock[] = blocks.map((b) => ({ name: b.name, activationBytes: Math.round(scale * b.staticBytes) }));
  const baselineBytes = Math.max(0, offPeakBytes - out.reduce((s, b) => s + b.activationBytes, 0));
  return { blocks: out, baselineBytes };
}
