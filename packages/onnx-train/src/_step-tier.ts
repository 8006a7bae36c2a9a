// The recompute set a TrainStep is built with: explicit `recompute`, a fixed tier resolved by
// @soup/grad-ckpt, or the budget tier planned by measured steps (plan-budget-tier, which measures
// FusedTrainSteps with explicit recompute sets: no import leads back here).
import { TrainInputError } from './errors';
import { planBudgetTier } from './plan-budget-tier';
import { resolveRecompute, type BudgetTierOption, type GradientCheckpointingOption } from './resolve-recompute';
import type { StepTier, TrainStepOptions } from './step-types';

export async function resolveStepTier(options: TrainStepOptions): Promise<StepTier> {
  const resolved = resolveRecompute({
    spec: options.spec,
    ...(options.gradientCheckpointing !== undefined ? { gradientCheckpointing: options.gradientCheckpointing } : {}),
    ...(options.recompute !== undefined ? { recompute: options.recompute } : {}),
  });
  if (resolved.budget === null)
    return { recompute: resolved.recompute, description: resolved.description, budgetReport: undefined };
  const { batchSize, memoryBudgetBytes } = resolved.budget;
  if (batchSize === undefined) {
    throw new TrainInputError(
      "tier 'budget' is planned for one batch size: pass gradientCheckpointing: {tier: 'budget', " +
        'memoryBudgetBytes, batchSize} (Trainer and runOneStep fill it in)',
    );
  }
  const {
    gradientCheckpointing: _tier,
    recompute: _recompute,
    parameters: _parameters,
    measure: _measure,
    profileFilePrefix: _profile,
    ...stepOptions
  } = options;
  const budgetReport = await planBudgetTier({ ...stepOptions, batchSize, memoryBudgetBytes });
  return { recompute: budgetReport.recompute, description: resolved.description, budgetReport };
}

/** A budget tier without a batch size gets `batchSize` (the trainer's or probe's own); anything else as is. */
export function withPlanBatch(option: GradientCheckpointingOption, batchSize: number): GradientCheckpointingOption {
  if (typeof option === 'object' && option !== null && option.tier === 'budget') {
    const budget = option as BudgetTierOption;
    if (budget.batchSize === undefined) return { ...budget, batchSize };
  }
  return option;
}
