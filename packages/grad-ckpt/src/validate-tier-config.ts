import { pyRepr, tierIsOff } from './_args';
import type { TierLike } from './types';

/** Parameters of {@link validateTierConfig}. */
export interface ValidateTierConfigParams {
  /** The configured tier. */
  tier: TierLike;
  /** Device memory in GB (read by `'auto'`). @default null */
  gpuMemoryGb?: number | null;
  /** Required for `tier: 'budget'`. @default undefined */
  memoryBudgetBytes?: number;
}

/** Problems found by {@link validateTierConfig}; both empty when the config is fine. */
export interface TierConfigReport {
  errors: string[];
  warnings: string[];
}

const KNOWN = new Set(['off', 'full', 'medium', 'selective', 'auto', 'budget']);

/**
 * Checks a gradient-checkpointing config without throwing. Errors: an unknown tier string
 * (the resolvers would silently turn it off), `'budget'` without a positive `memoryBudgetBytes`,
 * a negative or non-finite `gpuMemoryGb`. Warnings: `memoryBudgetBytes` on a tier that ignores it,
 * `'auto'` without `gpuMemoryGb` (falls back to full).
 */
export function validateTierConfig(params: ValidateTierConfigParams): TierConfigReport {
  const { tier, gpuMemoryGb, memoryBudgetBytes } = params;
  const errors: string[] = [];
  const warnings: string[] = [];
  const allowed = 'off, full, medium, selective, auto, budget (or true / false)';

  if (!tierIsOff(tier) && tier !== true && !(typeof tier === 'string' && KNOWN.has(tier))) {
    errors.push(`tier: unknown value ${pyRepr(tier)}; use one of ${allowed}.`);
  }
  if (tier === 'budget') {
    if (!(typeof memoryBudgetBytes === 'number' && Number.isFinite(memoryBudgetBytes) && memoryBudgetBytes > 0)) {
      errors.push(
        `tier 'budget' requires memoryBudgetBytes: the peak bytes the step may use (a positive number, e.g. ` +
          `${8 * 1024 ** 3} for 8 GiB); got ${String(memoryBudgetBytes)}.`,
      );
    }
  } else if (memoryBudgetBytes !== undefined) {
    warnings.push(`memoryBudgetBytes is only read by tier 'budget'; it is ignored for tier ${pyRepr(tier)}.`);
  }
  if (gpuMemoryGb !== undefined && gpuMemoryGb !== null && !(Number.isFinite(gpuMemoryGb) && gpuMemoryGb >= 0)) {
    errors.push(`gpuMemoryGb must be a finite number of GB ≥ 0, or null when unknown; got ${String(gpuMemoryGb)}.`);
  }
  if (tier === 'auto' && (gpuMemoryGb === undefined || gpuMemoryGb === null)) {
    warnings.push("tier 'auto' without gpuMemoryGb falls back to full checkpointing (every block).");
  }
  return { errors, warnings };
}
