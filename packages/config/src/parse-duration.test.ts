import { describe, expect, it } from 'vitest';
import { durationProblem, parseDuration } from './parse-duration';

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
  it('durationProblem: none for a duration; zero said as zero; anything else lists the forms, 1d among them', () => {
    expect(durationProblem('1d')).toBeUndefined();
    for (const zero of ['0', '0s', '00m', '0.0'])
      expect(durationProblem(zero), zero).toBe(
        `a duration must be longer than zero, got "${zero}" (leave the flag out for none)`,
      );
    expect(durationProblem('1x')).toBe(
      'expected a duration like 8h45m, 90m, 30s, 500ms or 1d (a bare number is seconds), got "1x"',
    );
  });
});
