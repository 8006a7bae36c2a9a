// Commit idempotency on the Hub: parentCommit, lost replies, concurrent writers.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeCheckpoint } from '../bench/_fixtures';
import { ConcurrentWriteError } from './errors';
import { pushCheckpoint } from './push-checkpoint';
import { makeTestStore } from './_test-helpers';
import type { Pointer } from './types';

const RUN = 'run-c';

async function pointer(t: Awaited<ReturnType<typeof makeTestStore>>): Promise<Pointer | null> {
  const raw = await t.reopen().readFile({ path: 'latest.json' });
  return raw === null ? null : (JSON.parse(Buffer.from(raw).toString('utf8')) as Pointer);
}

describe('HubStore commits are idempotent', () => {
  it.each(['drop', 500] as const)(
    'the pointer+prune commit landed but its reply was lost (%s): the replay is refused by parentCommit, ' +
      'reconciled, and the push succeeds',
    async (as) => {
      const t = await makeTestStore('hub');
      for (const step of [10, 20]) {
        const ck = writeCheckpoint({ root: join(t.work, 'out'), step, run: RUN });
        await pushCheckpoint({ store: t.store, step, dir: ck.dir, run: RUN, keepLocal: Infinity });
      }
      const ck = writeCheckpoint({ root: join(t.work, 'out'), step: 30, run: RUN });
      const r = await pushCheckpoint({
        store: t.store,
        step: 30,
        dir: ck.dir,
        run: RUN,
        keepRemote: 2,
        keepLocal: Infinity,
        onPhase: (e) => {
          if (e.phase === 'verified') t.server?.setFaults({ commitLostReply: { count: 1, as } });
        },
      });
      expect(t.server?.getFaults().commitLostReply?.count).toBe(0); // the fault fired
      expect(r.prunedRemote).toEqual(['ckpt/checkpoint-10']);
      expect((await pointer(t))?.step).toBe(30);
      const files = Object.keys(t.server?.files(t.location) ?? {});
      expect(files.some((p) => p.startsWith('ckpt/checkpoint-10/'))).toBe(false);
      expect(files.some((p) => p.startsWith('ckpt/checkpoint-20/'))).toBe(true);
      // The replay was refused (412), not applied twice.
      expect(
        t.server?.requests.filter((q) => q.path.endsWith('/commit/main') && q.status === 412).length,
      ).toBeGreaterThanOrEqual(1);
      expect(t.logLines.some((l) => /already landed|lost reply/.test(l))).toBe(true);
    },
  );

  it(
    'a commit that lost its reply while uploading data is reconciled too (puts whose bytes are there ' +
      'count as done)',
    async () => {
      const t = await makeTestStore('hub', { faults: { commitLostReply: { count: 1 } } });
      const ck = writeCheckpoint({ root: join(t.work, 'out'), step: 5, run: RUN });
      const r = await pushCheckpoint({ store: t.store, step: 5, dir: ck.dir, run: RUN, keepLocal: Infinity });
      // The fault fired: the data commit (the first one) landed and its reply was lost.
      expect(t.server?.getFaults().commitLostReply?.count).toBe(0);
      expect(
        t.logLines.some((l) => /already landed|lost reply/.test(l)),
        t.logLines.join('\n'),
      ).toBe(true);
      expect(r.step).toBe(5);
      expect((await pointer(t))?.step).toBe(5);
      // Every file of the checkpoint is on the server once (the replay was not applied twice).
      const files = Object.keys(t.server?.files(t.location) ?? {}).filter((p) => p.startsWith('ckpt/checkpoint-5/'));
      expect(files.sort()).toEqual(
        [...Object.keys(ck.hashes).map((n) => `ckpt/checkpoint-5/${n}`), 'ckpt/checkpoint-5/manifest.json'].sort(),
      );
    },
  );

  it(
    'a second writer that moved latest.json since this push read it is detected and named; the ' +
      'pointer is not overwritten',
    async () => {
      const t = await makeTestStore('hub');
      const ck10 = writeCheckpoint({ root: join(t.work, 'a'), step: 10, run: RUN });
      await pushCheckpoint({ store: t.store, step: 10, dir: ck10.dir, run: RUN, keepLocal: Infinity });
      const ck20 = writeCheckpoint({ root: join(t.work, 'a'), step: 20, run: RUN });
      const ck30 = writeCheckpoint({ root: join(t.work, 'b'), step: 30, run: RUN });
      const err = await pushCheckpoint({
        store: t.store,
        step: 20,
        dir: ck20.dir,
        run: RUN,
        keepLocal: Infinity,
        onPhase: async (e) => {
          // Another process pushes step 30 between this push's pointer read and its pointer commit.
          if (e.phase === 'verified')
            await pushCheckpoint({ store: t.reopen(), step: 30, dir: ck30.dir, run: RUN, keepLocal: Infinity });
        },
      }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConcurrentWriteError);
      expect((err as ConcurrentWriteError).path).toBe('latest.json');
      expect((err as ConcurrentWriteError).writer).toMatch(/latest\.json -> ckpt\/checkpoint-30.*step 30/);
      expect((await pointer(t))?.step).toBe(30);
    },
  );
});
