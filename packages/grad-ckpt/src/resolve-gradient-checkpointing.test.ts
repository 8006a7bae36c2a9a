import { describe, expect, test } from 'vitest';
import { TierError } from './errors';
import { resolveGradientCheckpointing } from './resolve-gradient-checkpointing';

const ON = { gradient_checkpointing: true, gradient_checkpointing_kwargs: { use_reentrant: false } };

describe('resolveGradientCheckpointing', () => {
  test.each([true, 'full', 'medium', 'selective', 'auto'] as const)('%j → HF non-reentrant kwargs', (tier) => {
    expect(resolveGradientCheckpointing(tier)).toEqual(ON);
    expect(resolveGradientCheckpointing({ tier, gpuMemoryGb: 40 })).toEqual(ON);
  });

  test.each([false, null, undefined, '', 'budget'] as const)('%j → {}', (tier) => {
    expect(resolveGradientCheckpointing(tier)).toEqual({});
  });

  test('an unknown tier throws instead of turning checkpointing off', () => {
    expect(() => resolveGradientCheckpointing('nope')).toThrow(TierError);
  });

  test('returns a fresh object each call (callers may mutate it)', () => {
    const a = resolveGradientCheckpointing('full');
    const b = resolveGradientCheckpointing('full');
    expect(a).not.toBe(b);
    expect(a).toEqual(b);
  });
});
