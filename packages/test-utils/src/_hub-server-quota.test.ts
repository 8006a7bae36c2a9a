// The test server's hourly commit quota answers as the Hub does, on a clock the test moves.
import { describe, expect, it } from 'vitest';
import { createFakeClock } from './fake-clock';
import { COMMIT_QUOTA_MESSAGE } from './_hub-server-quota';
import { startHubServer } from './hub-server';
import { useTempDir } from './temp-dir';

describe('hub test server: hourly commit quota', () => {
  it('refuses a 6th commit in the hour: 429, the Hub text, Retry-After, RateLimit; lets it in later', async () => {
    const clock = createFakeClock();
    const s = await startHubServer({
      dir: useTempDir('soup-hub-quota-'),
      now: clock.now,
      faults: { commitQuota: { perHour: 5 } },
    });
    try {
      const call = (path: string, init: RequestInit = {}): Promise<Response> =>
        fetch(`${s.url}${path}`, { ...init, headers: { Authorization: `Bearer ${s.token}`, ...init.headers } });
      await call('/api/repos/create', {
        method: 'POST',
        body: JSON.stringify({ name: 'q', organization: 'org', type: 'model' }),
      });
      const commit = (): Promise<Response> =>
        call('/api/models/org/q/commit/main', {
          method: 'POST',
          body: JSON.stringify({ key: 'header', value: { summary: 'c' } }),
          headers: { 'Content-Type': 'application/x-ndjson' },
        });
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) {
        statuses.push((await commit()).status);
        await clock.advance(60_000);
      }
      const refused = await commit();
      statuses.push(refused.status);
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
      expect(await refused.json()).toEqual({ error: COMMIT_QUOTA_MESSAGE });
      // The first commit leaves the hour 55 min from now (5 min have passed).
      expect(refused.headers.get('Retry-After')).toBe('3300');
      expect(refused.headers.get('RateLimit')).toBe('"commits";r=0;t=3300');
      expect(s.commitCount('org/q')).toBe(5);
      await clock.advance(3_300_000);
      expect((await commit()).status).toBe(200);
      const list = await call('/api/models/org/q/commits/main?limit=1');
      expect([list.status, list.headers.get('X-Total-Count')]).toEqual([200, '7']);
    } finally {
      await s.close();
    }
  });
});
