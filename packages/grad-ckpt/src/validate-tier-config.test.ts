import { describe, expect, test } from 'vitest';
import { validateTierConfig } from './validate-tier-config';

describe('validateTierConfig', () => {
  test('valid configs give no errors', () => {
    for (const tier of [true, false, null, 'off', 'full', 'medium', 'selective'] as const) {
      expect(validateTierConfig({ tier })).toEqual({ errors: [], warnings: [] });
    }
    expect(validateTierConfig({ tier: 'auto', gpuMemoryGb: 40 })).toEqual({ errors: [], warnings: [] });
    expect(validateTierConfig({ tier: 'budget', memoryBudgetBytes: 2 ** 30 })).toEqual({ errors: [], warnings: [] });
  });

  test('budget without a positive memoryBudgetBytes is an error naming the field', () => {
    for (const memoryBudgetBytes of [undefined, 0, -1, Number.NaN, Infinity]) {
      const { errors } = validateTierConfig({ tier: 'budget', memoryBudgetBytes });
      expect(errors).toHaveLength(1);
      expect(errors[0]).toContain("tier 'budget' requires memoryBudgetBytes");
    }
  });

  test('unknown tier and bad gpuMemoryGb are errors; ignored fields are warnings', () => {
    expect(validateTierConfig({ tier: 'fulll' }).errors).toEqual([
      "tier: unknown value 'fulll'; use one of off, full, medium, selective, auto, budget (or true / false).",
    ]);
    expect(validateTierConfig({ tier: 'auto', gpuMemoryGb: -4 }).errors[0]).toContain('gpuMemoryGb must be');
    expect(validateTierConfig({ tier: 'full', memoryBudgetBytes: 10 }).warnings[0]).toContain(
      "memoryBudgetBytes is only read by tier 'budget'",
    );
    expect(validateTierConfig({ tier: 'auto' }).warnings).toEqual([
      "tier 'auto' without gpuMemoryGb falls back to full checkpointing (every block).",
    ]);
  });
});
