import { describe, expect, it } from 'vitest';
import { parseDuration } from './parse-duration';

describe('parseDuration', () => {
  it('parses compound durations, largest unit first', () => {
    expect(parseDuration('8h45m')).toBe((8 * 60 + 45) * 60_000);
    expect(parseDuration('1h30m15s')).toBe(5415_000);
    expect(parseDuration('90m')).toBe(5_400_000);
    expect(parseDuration('250ms')).toBe(250);
    expect(parseDuration('1.5h')).toBe(5_400_000);
    expect(parseDuration('2d')).toBe(172_800_000);
    expect(parseDuration(' 45s ')).toBe(45_000);
  });
  it('reads a bare number as seconds', () => {
    expect(parseDuration('30')).toBe(30_000);
    expect(parseDuration('0.5')).toBe(500);
  });
  it('rejects what is not a duration', () => {
    for (const bad of ['', 'h', '8h45', '45m8h', '1h1h', '5 minutes', '-1s', '0', '0s', '1w', '1h 30m']) {
      expect(parseDuration(bad), bad).toBeUndefined();
    }
  });
});
