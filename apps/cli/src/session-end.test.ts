import { describe, expect, it } from 'vitest';
import { durationArg } from './_parse';
import { validateConfig } from '@soup/config';

describe('durationArg (--time-limit of train and run)', () => {
  it('reads the forms the help lists; a bad flag names the forms, and 0 is refused as zero', () => {
    expect(durationArg('8h45m')).toBe((8 * 60 + 45) * 60_000);
    expect(durationArg('90')).toBe(90_000);
    expect(durationArg('1d')).toBe(86_400_000);
    expect(() => durationArg('soon')).toThrow(
      'expected a duration like 8h45m, 90m, 30s, 500ms or 1d (a bare number is seconds), got "soon"',
    );
    for (const zero of ['0', '0s', '0.0'])
      expect(() => durationArg(zero)).toThrow(
        `a duration must be longer than zero, got "${zero}" (leave the flag out for none)`,
      );
  });
});

describe('soup.yaml training.time_limit', () => {
  const base = 'base: soup/tiny-gpt\ndata:\n  train: t.txt\n  max_length: 64\ntraining:\n  steps: 10\n';
  it('takes a duration or seconds, defaults to none, and names the field for a bad value', () => {
    expect(validateConfig({ text: base, file: '/p/soup.yaml' }).config?.training.timeLimitMs).toBeNull();
    expect(
      validateConfig({ text: `${base}  time_limit: 8h45m\n`, file: '/p/soup.yaml' }).config?.training.timeLimitMs,
    ).toBe(31_500_000);
    expect(
      validateConfig({ text: `${base}  time_limit: 90\n`, file: '/p/soup.yaml' }).config?.training.timeLimitMs,
    ).toBe(90_000);
    for (const bad of ['8 hours', '45m8h', 'true']) {
      const r = validateConfig({ text: `${base}  time_limit: ${bad}\n`, file: '/p/soup.yaml' });
      expect(r.config).toBeNull();
      expect(r.errors).toHaveLength(1);
      expect(r.errors[0]).toMatchObject({ path: 'training.time_limit', line: 7 });
      expect(r.errors[0]!.message).toMatch(/duration like 8h45m/);
    }
  });
});
