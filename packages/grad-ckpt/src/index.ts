export { resolveGranularity } from './resolve-granularity';
export { resolveGradientCheckpointing } from './resolve-gradient-checkpointing';
export { describeTier } from './describe-tier';
export { planCheckpoint, type PlanCheckpointParams } from './plan-checkpoint';
export { planForBudget, type PlanForBudgetParams, type BudgetPlan } from './plan-for-budget';
export { predictPeakBytes, type PredictPeakParams } from './predict-peak-bytes';
export {
  calibrateBudgetBlocks,
  type CalibrateBudgetBlocksParams,
  type CalibratedBudgetBlocks,
} from './calibrate-budget-blocks';
export { validateTierConfig, type ValidateTierConfigParams, type TierConfigReport } from './validate-tier-config';
export { AUTO_FULL_THRESHOLD_GB, AUTO_SELECTIVE_THRESHOLD_GB } from './thresholds';
export { GradCkptError, GranularityError, BudgetPlanError, TierError, type GradCkptErrorCode } from './errors';
export type {
  Granularity,
  TierName,
  TierLike,
  TierParams,
  BudgetTierConfig,
  FixedTierConfig,
  GradientCheckpointConfig,
  GradientCheckpointingKwargs,
  BudgetBlock,
} from './types';
