// gradient_checkpointing: budget — the fewest blocks to recompute so the step's measured peak fits
// memory_budget: measure the step without recompute and with every block recomputed, each in its own
// child process (through @soup/cuda-probe: in-process measurements skew each other), derive each
// block's activation bytes with @soup/grad-ckpt's calibrateBudgetBlocks (the same model onnx-train's
// in-process planBudgetTier uses), let planForBudget choose, then confirm the choice with a third
// measured step.
import type { ChildProbeFn } from '@soup/cuda-probe';
import { calibrateBudgetBlocks, planForBudget } from '@soup/grad-ckpt';
import { BudgetUnmeasuredError } from './errors';

/** Options of {@link planBudgetTier}. */
export interface PlanBudgetTierOptions {
  /** A probe running one real step with the given recompute plan. */
  probeWith: (recompute: string[]) => ChildProbeFn;
  batchSize: number;
  /** Block names (`h.0` … `h.<n-1>`). */
  blocks: string[];
  memoryBudgetBytes: number;
  /** Called after each measured step. */
  onMeasure?: (what: string, peakBytes: number) => void;
}

/** The budget tier's choice and the measurements behind it. */
export interface BudgetTierPlan {
  recompute: string[];
  /** Peak with nothing recomputed / with every block recomputed / with the chosen plan (measured). */
  peakOffBytes: number;
  peakFullBytes: number;
  peakPlanBytes: number;
  /** planForBudget's prediction for the chosen plan. */
  predictedPeakBytes: number;
  /** Measured peak of the chosen plan is within the budget. */
  fits: boolean;
}

async function peakOf(probe: ChildProbeFn, batchSize: number, what: string): Promise<number> {
  const o = await probe(batchSize);
  if (typeof o.peakBytes !== 'number') {
    throw new BudgetUnmeasuredError(
      `gradient_checkpointing: budget needs measured peaks, but the ${what} step reported none (${o.detail}` +
        `); use a fixed tier`,
    );
  }
  return o.peakBytes;
}

/** Measures and chooses the recompute set of `gradient_checkpointing: budget`. */
export async function planBudgetTier(opts: PlanBudgetTierOptions): Promise<BudgetTierPlan> {
  const { blocks, batchSize } = opts;
  const peakOffBytes = await peakOf(opts.probeWith([]), batchSize, 'un-checkpointed');
  opts.onMeasure?.('no recompute', peakOffBytes);
  const peakFullBytes = await peakOf(opts.probeWith(blocks), batchSize, 'fully checkpointed');
  opts.onMeasure?.('every block recomputed', peakFullBytes);
  const n = blocks.length;
  // The blocks of a GPT are identical: equal static shares, so each block gets (off − full) / (n − 1)
  // (peak(off) = base + n·a; peak(full) = base + a, the recomputed block's activations live again in the backward).
  const model = calibrateBudgetBlocks({
    offPeakBytes: peakOffBytes,
    fullPeakBytes: peakFullBytes,
    blocks: blocks.map((name) => ({ name, staticBytes: 1 })),
  });
  const plan = planForBudget({ ...model, memoryBudgetBytes: opts.memoryBudgetBytes });
  let peakPlanBytes: number;
  if (plan.recompute.length === 0) peakPlanBytes = peakOffBytes;
  else if (plan.recompute.length === n) peakPlanBytes = peakFullBytes;
  else {
    peakPlanBytes = await peakOf(opts.probeWith(plan.recompute), batchSize, 'planned');
    opts.onMeasure?.(`${plan.recompute.length} of ${n} blocks recomputed`, peakPlanBytes);
  }
  return {
    recompute: plan.recompute,
    peakOffBytes,
    peakFullBytes,
    peakPlanBytes,
    predictedPeakBytes: plan.predictedPeakBytes,
    fits: peakPlanBytes <= opts.memoryBudgetBytes,
  };
}
