import { describe, expect, it } from 'vitest';
import { resolveTimeLimitMs, watchSession } from './_session-end';
import { InterruptedError } from './errors';
import { validateConfig } from './validate-config';

describe('watchSession', () => {
  it('reports the signal main() aborted with, once check() has yielded; an abort without a name is "abort"', async () => {
    for (const [reason, want] of [
      [new InterruptedError('x', { signal: 'SIGTERM' }), 'SIGTERM'],
      [new InterruptedError('x', { signal: 'SIGINT' }), 'SIGINT'],
      [undefined, 'abort'],
    ] as const) {
      const c = new AbortController();
      let t = 1000;
      const w = watchSession({ signal: c.signal, timeLimitMs: null, startedAtMs: 0, now: () => t });
      expect(await w.check()).toBeNull();
      t = 2500;
      c.abort(reason);
      expect(w.ended).toEqual({ reason: want, afterMs: 2500 });
      t = 9000; // the first sighting is kept
      expect(await w.check()).toEqual({ reason: want, afterMs: 2500 });
      w.dispose();
    }
  });

  it('sees a signal delivered while the event loop was blocked, at the next check()', async () => {
    const c = new AbortController();
    const w = watchSession({ signal: c.signal, timeLimitMs: null });
    setImmediate(() => c.abort(new InterruptedError('x', { signal: 'SIGTERM' }))); // queued behind a "step"
    const until = Date.now() + 30;
    while (Date.now() < until) {
      // a synchronous step: nothing else runs meanwhile
    }
    expect(w.ended).toBeNull();
    expect((await w.check())?.reason).toBe('SIGTERM');
  });

  it('ends at the time limit, checked between steps, counting from the start; a signal seen first wins', async () => {
    let t = 0;
    const w = watchSession({ signal: new AbortController().signal, timeLimitMs: 5000, startedAtMs: 0, now: () => t });
    for (t = 0; t < 5000; t += 1000) expect(await w.check()).toBeNull();
    t = 5000;
    expect(await w.check()).toEqual({ reason: 'time-limit', afterMs: 5000 });
    const c = new AbortController();
    c.abort(new InterruptedError('x', { signal: 'SIGINT' }));
    t = 10_000;
    expect(
      (await watchSession({ signal: c.signal, timeLimitMs: 1, startedAtMs: 0, now: () => t }).check())?.reason,
    ).toBe('SIGINT');
  });

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
