// The directory store re-reads every copy it writes, and its verify trusts that read only while nothing has written
// to the file since: an in-place write, even one that puts the old size and mtime back, is found by the next verify.
import { execFileSync } from 'node:child_process';
import { closeSync, openSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeCheckpoint } from '../bench/_fixtures';
import { DirStore } from './dir-store';
import { pushCheckpoint } from './push-checkpoint';
import { verifyCheckpoint } from './verify-checkpoint';
import { makeTestStore } from './_test-helpers';

describe('directory store: the copy re-read at push stands for verify only while the file is untouched', () => {
  it('a byte rewritten in place with size and mtime restored fails the same store’s next verify', async () => {
    const t = await makeTestStore('dir');
    const ck = writeCheckpoint({ root: t.work, step: 5, run: 'run-d' });
    const pushed = await pushCheckpoint({ store: t.store, step: 5, dir: ck.dir, run: 'run-d' });
    const first = await verifyCheckpoint({ store: t.store, pathInRepo: pushed.pathInRepo });
    expect(first.ok).toBe(true);

    const stored = join(t.location, pushed.pathInRepo, 'model.safetensors');
    const before = statSync(stored, { bigint: true });
    // `touch -r` copies the timestamps to the nanosecond, so only the ctime tells the write.
    const stamp = join(t.work, 'stamp');
    writeFileSync(stamp, '');
    execFileSync('touch', ['-r', stored, stamp]);
    const fd = openSync(stored, 'r+');
    try {
      writeSync(fd, Buffer.from([0xff ^ 0x5a]), 0, 1, 100);
    } finally {
      closeSync(fd);
    }
    execFileSync('touch', ['-r', stamp, stored]);
    const after = statSync(stored, { bigint: true });
    expect([after.size, after.mtimeNs, after.ino]).toEqual([before.size, before.mtimeNs, before.ino]);

    const again = await verifyCheckpoint({ store: t.store, pathInRepo: pushed.pathInRepo });
    expect(again.ok).toBe(false);
    expect(again.problems.join('\n')).toMatch(/model\.safetensors reads as \d+ bytes with sha256/);
    // A store opened afresh reads the file in full, and agrees.
    const fresh = await verifyCheckpoint({ store: new DirStore({ root: t.location }), pathInRepo: pushed.pathInRepo });
    expect(fresh.problems).toEqual(again.problems);
  });

  it('a store wrapped with Object.create (as callers wrap one to watch its commits) pushes and verifies', async () => {
    const t = await makeTestStore('dir');
    const inner = new DirStore({ root: t.location });
    const wrapped = Object.assign(Object.create(inner) as DirStore, { description: inner.description });
    const ck = writeCheckpoint({ root: t.work, step: 6, run: 'run-w' });
    const pushed = await pushCheckpoint({ store: wrapped, step: 6, dir: ck.dir, run: 'run-w' });
    expect(pushed.verify.checkedByDownload).toBe(4);
    const again = await verifyCheckpoint({ store: wrapped, pathInRepo: pushed.pathInRepo });
    expect(again.problems).toEqual([]);
  });
});
