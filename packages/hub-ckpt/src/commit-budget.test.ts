// The Hub's commit budget, on a clock the test moves (no real sleeping): pushes paced by the interval, lease
// renewals riding on the pointer commits, the hourly commit quota waited out, the history squashed past N commits.
// The 12-hour session is long on purpose (~145 real pushes of tiny files): only a session that long shows the
// hourly commit count staying in budget hour after hour, renewals riding, and the history squashed twice.
import { createFakeClock, type FakeClock } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import { writeCheckpoint } from '../bench/_fixtures';
import { readPointer } from './_pointer';
import { makeTestStore, type TestStore } from './_test-helpers';
import { type CommitQuotaEvent, createPushQueue, type PushQueue } from './push-queue';
import { acquireLease } from './store-lease';
import { verifyCheckpoint } from './verify-checkpoint';

const RUN = 'run-budget';
const MINUTE = 60_000;
const TINY = { modelBytes: 2_000, optimizerBytes: 1_000 };

/** One simulated minute of training: the clock moves on, the trainer saves, the supervisor offers it. */
async function saveAt(t: TestStore, q: PushQueue, clock: FakeClock, step: number): Promise<void> {
  await clock.advance(MINUTE);
  q.offer({ step, dir: writeCheckpoint({ root: t.work, step, run: RUN, sizes: TINY }).dir });
  await q.settle();
  // Never a push lost to a refusal, at any minute.
  expect(q.failures).toEqual([]);
}

/** The session end: drain, moving the clock a minute at a time while it waits (a quota wait). */
async function endSession(q: PushQueue, clock: FakeClock): Promise<number> {
  const t0 = clock.now();
  let done = false;
  const drained = q.drain().then(() => {
    done = true;
  });
  while (!done) {
    await q.settle();
    await new Promise((r) => setImmediate(r));
    if (!done && q.current === null) await clock.advance(MINUTE);
  }
  await drained;
  return clock.now() - t0;
}

describe('commit budget on the Hub test server', () => {
  it('12 h saving every minute: <= 26 commits in every hour, no quota refusal, renewals ride on pushes, the ' +
    'history squashed past 100 commits, and the newest checkpoint pushed and pointed at the end', {
    timeout: 120_000,
  }, async () => {
    // 720 simulated minutes and ~145 real pushes of tiny files: a long session is the point of the test.
    const clock = createFakeClock();
    // The server refuses past 26 commits in any hour: a refusal would show as a quota event.
    const t = await makeTestStore('hub', { serverNow: clock.now, faults: { commitQuota: { perHour: 26 } } });
    const lease = await acquireLease({ store: t.store, run: RUN, clock });
    const quota: CommitQuotaEvent[] = [];
    const q = createPushQueue({
      store: t.store,
      run: RUN,
      lease,
      clock,
      keepRemote: 3,
      squashHistory: 'auto',
      squashAfterCommits: 100,
      onCommitQuota: (e) => quota.push(e),
    });
    const start = clock.now();
    for (let step = 1; step <= 720; step++) await saveAt(t, q, clock, step);
    // The session end: step 720 waits for the interval (the last push started at minute 716), yet goes now.
    expect(q.waiting?.step).toBe(720);
    expect(await endSession(q, clock)).toBe(0);

    const perHour = new Array<number>(12).fill(0);
    for (const at of t.server!.commitTimes(t.location)) perHour[Math.min(11, Math.floor((at - start) / 3_600_000))]!++;
    const stored = t.server!.storageBytes(t.location)!;
    const one = q.results.at(-1)!.totalBytes;
    console.log(
      `12 h: commits per hour ${perHour.join(' ')}; ${q.results.length} pushes, ${q.skipped.length} saves ` +
        `coalesced; ${t.server!.squashCount(t.location)} squashes; stored ${stored} bytes = ` +
        `${(stored / one).toFixed(1)} x one checkpoint (${one} bytes), against >= ${q.results.length * one} unsquashed`,
    );
    expect(Math.max(...perHour)).toBeLessThanOrEqual(26);
    expect([quota, q.quotaRefusals, q.failures]).toEqual([[], 0, []]);
    expect(q.results.length).toBe(145); // minutes 1, 6, ..., 716, and 720 at the end
    const { pointer } = await readPointer(t.store);
    expect(pointer).toMatchObject({ step: 720, path_in_repo: 'ckpt/checkpoint-720' });
    const ok = await verifyCheckpoint({ store: t.store, pathInRepo: 'ckpt/checkpoint-720', expectedStep: 720 });
    expect(ok.ok).toBe(true);
    // Renewals rode on the pointer commits: one lease commit at the start, two commits per push, nothing else.
    expect(t.server!.commitCount(t.location)).toBe(1 + 2 * 145);
    expect(lease.lost).toBe(false);
    expect(Date.parse(lease.info.expires_at)).toBeGreaterThan(clock.now());
    // Squashed every ~50 pushes: unsquashed, history would hold all 145 checkpoints; squashed, under half of that.
    expect(t.server!.squashCount(t.location)).toBe(2);
    expect(stored).toBeLessThan((q.results.length * one) / 2);
    await lease.release();
  });

  it('the Hub refuses after 5 commits in its hour: training goes on, told once, pushed later, none lost', async () => {
    const clock = createFakeClock();
    const t = await makeTestStore('hub', { serverNow: clock.now, faults: { commitQuota: { perHour: 5 } } });
    const warnings: string[] = [];
    const logger = { warn: (l: string) => warnings.push(l) };
    const lease = await acquireLease({ store: t.store, run: RUN, clock, logger }); // commit 1
    const quota: CommitQuotaEvent[] = [];
    const q = createPushQueue({ store: t.store, run: RUN, lease, clock, logger, onCommitQuota: (e) => quota.push(e) });
    // Pushes at minutes 1 and 6 (steps 1 and 5: the interval ends before minute 6's save; commits 2-5); minute
    // 11's (step 10) is refused: the oldest commit (the lease's, minute 0) leaves the hour at minute 60.
    for (let step = 1; step <= 30; step++) await saveAt(t, q, clock, step);
    expect(quota).toEqual([{ step: 10, retryAfterMs: 49 * MINUTE, retryAtMs: clock.now() + 30 * MINUTE }]);
    expect(q.results.map((r) => r.step)).toEqual([1, 5]);
    // Training went on: every save was taken, the newest waits.
    expect(q.waiting?.step).toBe(30);
    // The session end waits the quota out (to minute 60, and the pointer commit to 61), then pushes step 30.
    expect(await endSession(q, clock)).toBeGreaterThanOrEqual(30 * MINUTE);
    expect(q.results.map((r) => r.step)).toEqual([1, 5, 30]);
    expect(q.quotaRefusals).toBe(2);
    expect(q.failures).toEqual([]);
    const { pointer } = await readPointer(t.store);
    expect(pointer).toMatchObject({ step: 30 });
    const ok = await verifyCheckpoint({
      store: t.store,
      pathInRepo: 'ckpt/checkpoint-30',
      expectedManifestSha256: pointer!.manifest_sha256,
    });
    expect(ok.ok).toBe(true);
    // Reported once by the queue (not per refusal), once by the lease whose renewal it held back.
    expect(warnings.filter((w) => /refused a commit for its hourly commit quota/.test(w))).toHaveLength(1);
    expect(warnings.filter((w) => /commit quota holds the lease/.test(w)).length).toBeLessThanOrEqual(1);
    await lease.release();
  });
});
