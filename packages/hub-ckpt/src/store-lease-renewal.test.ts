// When the lease renews, on a clock the test moves: on the Hub a renewal-only commit only after TTL/2 without
// a push (renewals ride on the pointer commits); a directory store renews every TTL/3 (free there).
import { createFakeClock } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import { makeTestStore } from './_test-helpers';
import { acquireLease } from './store-lease';

/** Lets a renewal the timer started reach the store. */
const settle = (): Promise<void> => new Promise((r) => setTimeout(r, 150));

describe('lease renewals', () => {
  it('Hub: no renewal-only commit before TTL/2 without a push; a ride on a commit resets the count', async () => {
    const clock = createFakeClock();
    const t = await makeTestStore('hub');
    const lease = await acquireLease({ store: t.store, run: 'r', ttlMs: 600_000, clock });
    const commits = (): number => t.server!.commitCount(t.location);
    expect(commits()).toBe(1);
    await clock.advance(290_000);
    await settle();
    expect(commits()).toBe(1);
    await clock.advance(10_000); // 5 min without a push: one renewal
    while (lease.renewedAtMs < clock.now()) await settle();
    expect(commits()).toBe(2);
    // A push's pointer commit carries the renewal: the next renewal-only commit is 5 min after it.
    await clock.advance(60_000);
    const ride = lease.rideAlong()!;
    await t.store.commit({ message: 'pointer', operations: [ride.operation], ifMatch: ride.ifMatch });
    ride.settle(true);
    expect(lease.renewedAtMs).toBe(clock.now());
    await clock.advance(290_000);
    await settle();
    expect(commits()).toBe(3);
    await lease.release();
  });

  it('directory: renews every TTL/3, and no renewal rides on a commit there', async () => {
    const clock = createFakeClock();
    const t = await makeTestStore('dir');
    const lease = await acquireLease({ store: t.store, run: 'r', ttlMs: 120_000, clock });
    for (let i = 1; i <= 3; i++) {
      await clock.advance(40_000);
      while (lease.renewedAtMs < clock.now()) await settle();
    }
    expect(t.commits()).toBe(4);
    expect(lease.rideAlong()).toBeNull();
    await lease.release();
  });
});
