import { describe, expect, it } from 'vitest';
import { resolveTimeLimitMs } from './_session';
import { validateConfig } from '@soup/config';

describe('resolveTimeLimitMs', () => {
  it('resolveTimeLimitMs: the flag wins over the config; a bad flag names itself and the forms', () => {
    expect(resolveTimeLimitMs(undefined, null)).toBeNull();
    expect(resolveTimeLimitMs(undefined, 60_000)).toBe(60_000);
    expect(resolveTimeLimitMs('8h45m', 60_000)).toBe((8 * 60 + 45) * 60_000);
    expect(resolveTimeLimitMs('90', null)).toBe(90_000);
    expect(() => resolveTimeLimitMs('soon', null)).toThrow(
      '--time-limit "soon" is not a duration: use e.g. 8h45m, 90m, 45s, or a number of seconds',
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
