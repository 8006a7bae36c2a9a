import { describe, expect, it } from 'vitest';
import { parseHeadroom } from './parse-headroom';

describe('parseHeadroom', () => {
  it('reads a percentage or a fraction below 100 %', () => {
    expect(parseHeadroom('10%')).toBeCloseTo(0.1);
    expect(parseHeadroom(' 12.5 % ')).toBeCloseTo(0.125);
    expect(parseHeadroom('0%')).toBe(0);
    expect(parseHeadroom('0.1')).toBeCloseTo(0.1);
    expect(parseHeadroom('.25')).toBeCloseTo(0.25);
    expect(parseHeadroom('0')).toBe(0);
  });
  it('refuses 100 % and more, negatives, bare numbers above 0 and words', () => {
    for (const bad of ['100%', '150%', '1', '1.0', '10', '-5%', '-0.1', 'ten', '', '%'])
      expect(parseHeadroom(bad)).toBeUndefined();
  });
});
