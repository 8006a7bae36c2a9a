import { describe, expect, it } from 'vitest';
import { didYouMean } from './did-you-mean';

describe('didYouMean', () => {
  const fields = ['batch_size', 'auto_batch_size_strategy', 'gradient_checkpointing', 'lr', 'steps'];
  it('finds typos, transpositions and dash/underscore swaps', () => {
    expect(didYouMean({ input: 'bacth_size', candidates: fields })).toBe('batch_size');
    expect(didYouMean({ input: 'batch-size', candidates: fields })).toBe('batch_size');
    expect(didYouMean({ input: 'gradient_checkpoint', candidates: fields })).toBe('gradient_checkpointing');
    expect(didYouMean({ input: 'step', candidates: fields })).toBe('steps');
  });
  it('stays quiet when nothing is close', () => {
    expect(didYouMean({ input: 'optimizer', candidates: fields })).toBeUndefined();
    expect(didYouMean({ input: 'x', candidates: [] })).toBeUndefined();
  });
  it('honours maxDistance', () => {
    expect(didYouMean({ input: 'stpes', candidates: fields, maxDistance: 0 })).toBeUndefined();
    expect(didYouMean({ input: 'stpes', candidates: fields, maxDistance: 1 })).toBe('steps');
  });
});
