import { describe, expect, it } from 'vitest';
import { isRetryableStatus, makeRetryingFetch, parseRetryAfterMs } from './_retry-fetch';

describe('retrying fetch', () => {
  it('parses Retry-After as seconds or an HTTP date', () => {
    expect(parseRetryAfterMs('3')).toBe(3000);
    expect(parseRetryAfterMs('0.5')).toBe(500);
    expect(parseRetryAfterMs('Wed, 21 Oct 2015 07:28:10 GMT', Date.parse('Wed, 21 Oct 2015 07:28:00 GMT'))).toBe(
      10_000,
    );
    expect(parseRetryAfterMs(null)).toBeNull();
    expect(parseRetryAfterMs('soon')).toBeNull();
  });

  it('retries 429/5xx and network errors, not 4xx; waits what Retry-After says, capped', async () => {
    expect([429, 500, 502, 503, 504, 408].every(isRetryableStatus)).toBe(true);
    expect([400, 401, 403, 404, 409, 412, 422, 501].some(isRetryableStatus)).toBe(false);
    const answers: Array<Response | Error> = [
      new Response('', { status: 429, headers: { 'Retry-After': '120' } }),
      new TypeError('fetch failed'),
      new Response('', { status: 503 }),
      new Response('ok', { status: 200 }),
    ];
    const waits: number[] = [];
    let calls = 0;
    const fake = (async () => {
      const a = answers[calls++];
      if (a instanceof Error) throw a;
      return a as Response;
    }) as typeof fetch;
    const f = makeRetryingFetch({
      fetch: fake,
      secrets: [],
      baseDelayMs: 100,
      maxDelayMs: 5000,
      sleep: async (ms) => void waits.push(ms),
    });
    const res = await f('http://x/y', { method: 'POST', body: 'b' });
    expect(res.status).toBe(200);
    expect(calls).toBe(4);
    expect(waits[0]).toBe(5000); // Retry-After 120 s, capped at maxDelayMs
    expect(waits[1]).toBeGreaterThanOrEqual(160); // 100 * 2 ± 20 %
    expect(waits[1]).toBeLessThanOrEqual(240);
    expect(waits[2]).toBeGreaterThanOrEqual(320);

    calls = 0;
    const four = makeRetryingFetch({
      fetch: (async () => (calls++, new Response('', { status: 404 }))) as typeof fetch,
      secrets: [],
      sleep: async () => undefined,
    });
    expect((await four('http://x')).status).toBe(404);
    expect(calls).toBe(1);
  });
});
