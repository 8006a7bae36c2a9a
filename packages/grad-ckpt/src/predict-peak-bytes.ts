import { checkBlocks, checkBytes } from './_budget-input';
import { BudgetPlanError } from './errors';
import type { BudgetBlock } from './types';

/** Parameters of {@link predictPeakBytes}. */
export interface PredictPeakParams {
  /** Every checkpointable block with its measured activation bytes. */
  blocks: readonly BudgetBlock[];
  /**
   * Peak memory of the step that does not depend on the plan (weights, grads, optimizer state, workspace), in bytes.
   */
  baselineBytes: number;
  /** Names of the blocks that recompute. */
  recompute: readonly string[];
}

/**
 * The budget planner's memory model, an upper bound on the step's peak:
 *
 * `baselineBytes + Σ activationBytes of kept blocks + max activationBytes of recomputed blocks`
 *
 * Kept blocks hold their activations from the forward to their backward; a recomputed block
 * frees them after its forward and re-creates them, one block at a time, in the backward —
 * at that moment at most every kept block plus that one block are alive, hence the `max` term.
 * @throws {BudgetPlanError} on a bad field or a name that is not among `blocks`.
 */
export function predictPeakBytes(params: PredictPeakParams): number {
  const { blocks, baselineBytes, recompute } = params;
  checkBlocks(blocks);
  checkBytes('baselineBytes', baselineBytes, false);
  const byName = new Map(blocks.map((b) => [b.name, b.activationBytes]));
  const chosen = new Set<string>();
  for (const name of recompute) {
    if (!byName.has(name))
      throw new BudgetPlanError(`recompute names '${name}', which is not among blocks`, { field: 'recompute' });
    chosen.add(name);
  }
  let kept = 0;
  let largestRecomputed = 0;
  for (const block of blocks) {
    if (chosen.has(block.name)) largestRecomputed = Math.max(largestRecomputed, block.activationBytes);
    else kept += block.activationBytes;
  }
  return baselineBytes + kept + largestRecomputed;
}
