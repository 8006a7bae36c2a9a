import { describe, expect, test } from 'vitest';
import { describeTier } from './describe-tier';

describe('describeTier', () => {
  test('the original strings', () => {
    expect(describeTier(false)).toBe('off');
    expect(describeTier(null)).toBe('off');
    expect(describeTier('')).toBe('off');
    expect(describeTier(true)).toBe('full (every block)');
    expect(describeTier('full')).toBe('full (every block)');
    expect(describeTier('medium')).toBe('medium (every other block)');
    expect(describeTier('selective')).toBe('selective (attention only)');
    expect(describeTier('auto')).toBe('auto → full (unknown VRAM)');
    expect(describeTier('auto', 16)).toBe('auto → full (VRAM 16GB)');
    expect(describeTier('auto', 40)).toBe('auto → medium (VRAM 40GB)');
    expect(describeTier('auto', 80)).toBe('auto → medium (VRAM 80GB)');
    expect(describeTier('auto', 192)).toBe('auto → selective (VRAM 192GB)');
    expect(describeTier({ tier: 'auto', gpuMemoryGb: 40 })).toBe('auto → medium (VRAM 40GB)');
    // unknown strings come back as they are (Python: str(tier))
    expect(describeTier('weird')).toBe('weird');
  });

  test("GB are rounded like Python's :.0f (half to even)", () => {
    expect(describeTier('auto', 23.5)).toBe('auto → full (VRAM 24GB)');
    expect(describeTier('auto', 22.5)).toBe('auto → full (VRAM 22GB)');
    expect(describeTier('auto', 40.5)).toBe('auto → medium (VRAM 40GB)');
    expect(describeTier('auto', 41.5)).toBe('auto → medium (VRAM 42GB)');
    expect(describeTier('auto', 79.6)).toBe('auto → medium (VRAM 80GB)');
    expect(describeTier('auto', 80.4)).toBe('auto → selective (VRAM 80GB)');
    expect(describeTier('auto', 0)).toBe('auto → full (VRAM 0GB)');
    expect(describeTier('auto', 1e21)).toBe('auto → selective (VRAM 1000000000000000000000GB)');
    expect(describeTier('auto', Infinity)).toBe('auto → selective (VRAM infGB)');
  });

  test('budget shows its memory budget when given', () => {
    expect(describeTier({ tier: 'budget', memoryBudgetBytes: 1.5 * 1024 ** 3 })).toBe('budget (peak ≤ 1.50 GiB)');
    expect(describeTier({ tier: 'budget', memoryBudgetBytes: 512 * 1024 ** 2 })).toBe('budget (peak ≤ 512.00 MiB)');
    expect(describeTier('budget')).toBe('budget');
  });
});
