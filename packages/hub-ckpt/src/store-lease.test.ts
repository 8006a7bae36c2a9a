import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runNode } from '@soup/test-utils';
import { writeCheckpoint } from '../bench/_fixtures';
import { ConcurrentWriteError, FolderConflictError, LeaseHeldError, LeaseLostError } from './errors';
import { pushCheckpoint } from './push-checkpoint';
import { acquireLease, LEASE_PATH } from './store-lease';
import { makeTestStore, STORE_KINDS } from './_test-helpers';
import type { CheckpointStore, StoreCommitParams } from './types';

/** Every file under a checkpoint folder, with its bytes, as the store serves them. */
async function folderBytes(store: CheckpointStore, prefix: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const e of await store.list({ prefix }))
    out[e.path] = Buffer.from((await store.readFile({ path: e.path })) ?? new Uint8Array()).toString('base64');
  return out;
}

describe.each(STORE_KINDS)('one writer per store (%s store)', (kind) => {
  it(
    'a second writer is refused while the lease is live, naming host, pid, since and run; released, ' +
      'it can take it',
    async () => {
      const t = await makeTestStore(kind);
      const a = await acquireLease({ store: t.store, run: 'run-a', ttlMs: 60_000, autoRenew: false });
      const err = await acquireLease({
        store: t.reopen(),
        run: 'run-b',
        ttlMs: 60_000,
        autoRenew: false,
        pid: process.pid + 1,
      }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(LeaseHeldError);
      const held = err as LeaseHeldError;
      expect(held.holder).toMatchObject({ pid: process.pid, run: 'run-a', since: a.info.since });
      expect(held.message).toContain(`pid ${process.pid}`);
      expect(held.message).toContain(a.info.host);
      expect(held.message).toContain(a.info.since);
      expect(held.message).toContain('run "run-a"');
      // The same run started twice is refused too.
      await expect(
        acquireLease({ store: t.reopen(), run: 'run-a', ttlMs: 60_000, autoRenew: false, pid: process.pid + 1 }),
      ).rejects.toBeInstanceOf(LeaseHeldError);
      await a.release();
      expect(await t.store.readFile({ path: LEASE_PATH })).toBeNull();
      const b = await acquireLease({ store: t.reopen(), run: 'run-b', ttlMs: 60_000, autoRenew: false });
      expect(b.info.run).toBe('run-b');
      await b.release();
    },
  );

  it('an expired lease is taken over, and the old holder finds out at its next renewal or write', async () => {
    const t = await makeTestStore(kind);
    const a = await acquireLease({ store: t.store, run: 'run-a', ttlMs: 5_000, autoRenew: false, host: 'host-a' });
    const later = Date.now() + 6_000;
    const b = await acquireLease({
      store: t.reopen(),
      run: 'run-b',
      ttlMs: 5_000,
      autoRenew: false,
      host: 'host-b',
      now: () => later,
    });
    expect(b.info.host).toBe('host-b');
    await a.renew();
    expect(a.lost).toBe(true);
    const ck = writeCheckpoint({ root: t.work, step: 10, run: 'run-a' });
    await expect(
      pushCheckpoint({ store: t.store, step: 10, dir: ck.dir, run: 'run-a', lease: a }),
    ).rejects.toBeInstanceOf(LeaseLostError);
    expect(await t.store.list({ prefix: 'ckpt' })).toEqual([]);
  });

  it("a dead holder's lease on this host is taken over at once", async () => {
    const t = await makeTestStore(kind);
    const dead = Number((await runNode(['-e', 'console.log(process.pid)'])).stdout.trim());
    await acquireLease({ store: t.store, run: 'run-a', ttlMs: 600_000, autoRenew: false, pid: dead });
    const b = await acquireLease({ store: t.reopen(), run: 'run-a', ttlMs: 600_000, autoRenew: false });
    expect(b.info.pid).toBe(process.pid);
    expect(t.logLines.join('\n') + (kind === 'dir' ? '' : '')).toBeDefined();
  });

  it(
    'two writers race on one step: the one that read the pointer first is refused at its data commit; ' +
      'the first checkpoint stays byte-identical',
    async () => {
      const t = await makeTestStore(kind);
      const ckA = writeCheckpoint({ root: join(t.work, 'a'), step: 10, run: 'run-a', salt: 'a' });
      const ckB = writeCheckpoint({ root: join(t.work, 'b'), step: 10, run: 'run-a', salt: 'b' });
      // B reads the pointer (none) and lists the folder (empty); then, just before B's data commit, A pushes the same
      // step to the end.
      let raced = false;
      const inner = t.reopen();
      const racing = new Proxy(inner, {
        get(target, prop) {
          if (prop === 'commit') {
            return async (p: StoreCommitParams): Promise<void> => {
              if (!raced) {
                raced = true;
                await pushCheckpoint({ store: t.store, step: 10, dir: ckA.dir, run: 'run-a' });
              }
              return target.commit(p);
            };
          }
          const v = Reflect.get(target, prop) as unknown;
          return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
        },
      });
      const before = () => folderBytes(t.store, 'ckpt/checkpoint-10');
      const err = await pushCheckpoint({ store: racing, step: 10, dir: ckB.dir, run: 'run-a' }).catch(
        (e: unknown) => e,
      );
      expect(raced).toBe(true);
      expect(err).toBeInstanceOf(ConcurrentWriteError);
      const stored = await before();
      for (const [name, file] of Object.entries({ 'model.safetensors': 1, 'optimizer.safetensors': 1 })) {
        void file;
        expect(
          Buffer.from(stored[`ckpt/checkpoint-10/${name}`] ?? '', 'base64').equals(readFileSync(join(ckA.dir, name))),
        ).toBe(true);
      }
      const ptr = JSON.parse(
        new TextDecoder().decode((await t.store.readFile({ path: 'latest.json' })) ?? new Uint8Array()),
      ) as { manifest_sha256: string };
      const manifest = await t.store.readFile({ path: 'ckpt/checkpoint-10/manifest.json' });
      const { createHash } = await import('node:crypto');
      expect(
        createHash('sha256')
          .update(manifest ?? new Uint8Array())
          .digest('hex'),
      ).toBe(ptr.manifest_sha256);
    },
  );

  it(
    'never replaces an unpointed folder whose manifest differs, unless this session holds the lease ' +
      'for the same run',
    async () => {
      const t = await makeTestStore(kind);
      const ckA = writeCheckpoint({ root: join(t.work, 'a'), step: 10, run: 'run-a', salt: 'a' });
      // A's push crashes after its data commit, before the pointer: an unpointed folder.
      await expect(
        pushCheckpoint({
          store: t.store,
          step: 10,
          dir: ckA.dir,
          run: 'run-a',
          onPhase: (e) => {
            if (e.phase === 'verified') throw new Error('crash');
          },
        }),
      ).rejects.toThrow('crash');
      const kept = await folderBytes(t.store, 'ckpt/checkpoint-10');
      const ckB = writeCheckpoint({ root: join(t.work, 'b'), step: 10, run: 'run-a', salt: 'b' });
      const err = await pushCheckpoint({ store: t.reopen(), step: 10, dir: ckB.dir, run: 'run-a' }).catch(
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(FolderConflictError);
      expect(await folderBytes(t.store, 'ckpt/checkpoint-10')).toEqual(kept);
      const lease = await acquireLease({ store: t.reopen(), run: 'run-a', autoRenew: false });
      const r = await pushCheckpoint({ store: t.reopen(), step: 10, dir: ckB.dir, run: 'run-a', lease });
      expect(r.step).toBe(10);
      await lease.release();
      if (kind === 'dir') expect(readdirSync(t.location).filter((n) => n.endsWith('.lock'))).toEqual([]);
    },
  );
});
