import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { TierError } from './errors';
import { resolveGranularity } from './resolve-granularity';

describe('resolveGranularity', () => {
  test.each([false, null, undefined, ''] as const)('off value %j → null', (tier) => {
    expect(resolveGranularity(tier)).toBeNull();
    expect(resolveGranularity({ tier, gpuMemoryGb: 16 })).toBeNull();
  });

  test('true and "full" → full; medium and selective as is', () => {
    expect(resolveGranularity(true)).toBe('full');
    expect(resolveGranularity('full')).toBe('full');
    expect(resolveGranularity('medium')).toBe('medium');
    expect(resolveGranularity('selective')).toBe('selective');
    // gpuMemoryGb only matters for auto
    expect(resolveGranularity('selective', 8)).toBe('selective');
    expect(resolveGranularity('full', 192)).toBe('full');
  });

  test.each([
    [16, 'full'],
    [0, 'full'],
    [23.999, 'full'],
    [24, 'medium'],
    [40, 'medium'],
    [80, 'medium'],
    [80.0001, 'selective'],
    [192, 'selective'],
    [Infinity, 'selective'],
  ] as const)('auto with %s GB → %s', (gb, expected) => {
    expect(resolveGranularity('auto', gb)).toBe(expected);
    expect(resolveGranularity({ tier: 'auto', gpuMemoryGb: gb })).toBe(expected);
  });

  test('auto with unknown memory → full', () => {
    expect(resolveGranularity('auto')).toBe('full');
    expect(resolveGranularity('auto', null)).toBe('full');
    expect(resolveGranularity({ tier: 'auto' })).toBe('full');
    expect(resolveGranularity('auto', Number.NaN)).toBe('full');
  });

  test('budget → null (it plans per block); anything else throws, naming the tiers (no silent null)', () => {
    expect(resolveGranularity('budget')).toBeNull();
    expect(() => resolveGranularity({ tier: 'huge' })).toThrow(
      `unknown gradient-checkpointing tier "huge": use false (off), true, 'full', 'medium', 'selective', 'auto' or ` +
        `'budget'`,
    );
    expect(() => resolveGranularity('FULL')).toThrow(`tier "FULL" (did you mean 'full'?)`);
    for (const bad of ['fulll', 'off', 'FULL', 'huge']) {
      expect(() => resolveGranularity(bad), bad).toThrow(TierError);
      expect(() => resolveGranularity(bad), bad).toThrow(expect.objectContaining({ code: 'SOUP_GRAD_CKPT_BAD_TIER' }));
    }
  });

  test('auto over the whole range follows the 24 / 80 GB thresholds', () => {
    fc.assert(
      fc.property(fc.double({ min: 0, max: 4096, noNaN: true }), (gb) => {
        const expected = gb < 24 ? 'full' : gb <= 80 ? 'medium' : 'selective';
        expect(resolveGranularity('auto', gb)).toBe(expected);
      }),
    );
  });
});
