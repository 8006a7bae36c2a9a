import { describe, expect, it } from 'vitest';
import { writeCheckpoint } from '../bench/_fixtures';
import { createPushQueue, type PushJob } from './push-queue';
import { readPointer } from './_pointer';
import { makeTestStore, STORE_KINDS } from './_test-helpers';

const RUN = 'run-q';

describe.each(STORE_KINDS)('createPushQueue on %s store', (kind) => {
  it(
    'abortSuperseded: a newer checkpoint waiting aborts the push in flight; one pointer move, to the ' + 'newer',
    async () => {
      const t = await makeTestStore(kind);
      const dirs = [60, 61].map((step) => writeCheckpoint({ root: t.work, step, run: RUN }).dir);
      let release: () => void = () => {};
      const uploaded = new Promise<void>((r) => (release = r));
      const q = createPushQueue({
        store: t.store,
        run: RUN,
        // Step 60 is held after its upload until 61 is offered (a session end: the trainer's last save lands).
        onPhase: async (e) => {
          if (e.step === 60 && e.phase === 'uploaded') await uploaded;
        },
      });
      q.offer({ step: 60, dir: dirs[0]! });
      while (q.current === null) await new Promise((r) => setTimeout(r, 5));
      expect(q.abortSuperseded()).toBe(false); // nothing newer waits
      q.offer({ step: 61, dir: dirs[1]! });
      expect(q.abortSuperseded()).toBe(true);
      release();
      await q.drain();
      expect(q.results.map((r) => r.step)).toEqual([61]);
      expect(q.failures.map((f) => [f.job.step, (f.error as Error).message])).toEqual([[60, 'superseded by step 61']]);
      expect((await readPointer(t.store)).pointer).toMatchObject({ step: 61 });
    },
  );

  it('pushes one at a time, newest waiting folder wins, and the pointer ends on the newest', async () => {
    const t = await makeTestStore(kind);
    const dirs = [10, 20, 30, 40].map((step) => writeCheckpoint({ root: t.work, step, run: RUN }).dir);
    let active = 0;
    let maxActive = 0;
    const q = createPushQueue({
      store: t.store,
      run: RUN,
      onPhase: (e) => {
        if (e.phase === 'hash') maxActive = Math.max(maxActive, ++active);
        if (e.phase === 'done') active--;
      },
    });
    // 10 starts at once; 20 and 30 arrive while it pushes: 20 is superseded by 30 before it starts.
    q.offer({ step: 10, dir: dirs[0]! });
    q.offer({ step: 20, dir: dirs[1]! });
    q.offer({ step: 30, dir: dirs[2]! });
    q.offer({ step: 20, dir: dirs[1]! }); // not newer than what was offered: ignored
    await q.drain();
    expect(maxActive).toBe(1);
    expect(q.results.map((r) => r.step)).toEqual([10, 30]);
    expect(q.skipped.map((j: PushJob) => j.step)).toEqual([20]);
    expect(q.pushedStep).toBe(30);
    expect((await readPointer(t.store)).pointer).toMatchObject({ step: 30, run: RUN, terminal: false });
    expect((await t.store.list({ prefix: 'ckpt/checkpoint-20' })).length).toBe(0);
    q.offer({ step: 40, dir: dirs[3]! });
    await q.drain();
    expect(q.pushedStep).toBe(40);
    expect((await readPointer(t.store)).pointer?.step).toBe(40);
  });

  it('skips steps at or below afterStep, reports a failed push and accepts the folder again', async () => {
    const t = await makeTestStore(kind);
    const ok = writeCheckpoint({ root: t.work, step: 5, run: RUN }).dir;
    const errors: string[] = [];
    const q = createPushQueue({
      store: t.store,
      run: RUN,
      afterStep: 5,
      onError: (err, job) => errors.push(`${job.step}: ${(err as Error).name}`),
    });
    q.offer({ step: 5, dir: ok });
    await q.drain();
    expect(q.results).toHaveLength(0);
    q.offer({ step: 7, dir: `${t.work}/missing-checkpoint-7` });
    await q.drain();
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^7: /);
    expect(q.failures.map((f) => f.job.step)).toEqual([7]);
    expect((await t.store.exists()) ? (await readPointer(t.store)).raw : null).toBeNull(); // nothing half-pointed
    const fixed = writeCheckpoint({ root: t.work, step: 7, run: RUN }).dir;
    q.offer({ step: 7, dir: fixed });
    await q.drain();
    expect(q.pushedStep).toBe(7);
    expect((await readPointer(t.store)).pointer?.step).toBe(7);
  });
});
