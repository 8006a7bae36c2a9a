import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { writeCheckpoint } from '../bench/_fixtures';
import { DirStore } from './dir-store';
import { DiskFullError } from './errors';
import { pullCheckpoint } from './pull-checkpoint';
import { pushCheckpoint } from './push-checkpoint';
import { makeTestStore, STORE_KINDS } from './_test-helpers';

const RUN = 'run-full';
const isRoot = process.getuid?.() === 0;

/** A 32 KiB tmpfs at `dir`, unmounted when the test ends. */
function smallDisk(dir: string): void {
  mkdirSync(dir, { recursive: true });
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=32k', 'tmpfs', dir]);
  onTestFinished(() => void execFileSync('umount', [dir]));
}

describe('a full local disk is said as such (ENOSPC on a small tmpfs)', () => {
  if (!isRoot) console.log('skipped: mounting a tmpfs needs root');
  it.skipIf(!isRoot).each(STORE_KINDS)(
    'pulling into a full disk: DiskFullError naming the folder and the bytes needed; nothing left behind (%s store)',
    async (kind) => {
      const t = await makeTestStore(kind);
      const ck = writeCheckpoint({ root: t.work, step: 10, run: RUN });
      await pushCheckpoint({ store: t.store, step: 10, dir: ck.dir, run: RUN });
      const disk = join(t.work, 'small');
      smallDisk(disk);
      const err = await pullCheckpoint({
        store: t.reopen(),
        pathInRepo: 'ckpt/checkpoint-10',
        dir: join(disk, 'resume'),
      }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DiskFullError);
      const e = err as DiskFullError;
      expect(e.code).toBe('SOUP_HUB_CKPT_DISK_FULL');
      expect(e.path).toBe(join(disk, 'resume'));
      expect(e.bytesNeeded).toBeGreaterThan(64_000);
      expect(e.message).toContain(`${e.bytesNeeded} bytes`);
      expect(readdirSync(disk)).toEqual([]);
    },
  );

  it.skipIf(!isRoot)(
    'a directory store on a full disk: DiskFullError; the store and its pointer are untouched',
    async () => {
      const t = await makeTestStore('dir');
      const root = join(t.work, 'small');
      smallDisk(root);
      const store = new DirStore({ root: join(root, 'store') });
      const ck1 = writeCheckpoint({
        root: t.work,
        step: 1,
        run: RUN,
        sizes: { modelBytes: 4_000, optimizerBytes: 1_000 },
      });
      await pushCheckpoint({ store, step: 1, dir: ck1.dir, run: RUN });
      const pointer = await store.readFile({ path: 'latest.json' });
      const ck2 = writeCheckpoint({ root: t.work, step: 2, run: RUN });
      const err = await pushCheckpoint({ store, step: 2, dir: ck2.dir, run: RUN }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DiskFullError);
      expect((err as DiskFullError).bytesNeeded).toBeGreaterThan(64_000);
      expect(await store.readFile({ path: 'latest.json' })).toEqual(pointer);
      expect(existsSync(join(root, 'store', 'ckpt', 'checkpoint-2'))).toBe(false);
      expect(readdirSync(join(root, 'store', '.soup-staging'))).toEqual([]);
    },
  );
});
