import { execFileSync } from 'node:child_process';
import { closeSync, openSync, readFileSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { useTempDir } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import { sha256, writeCheckpoint } from '../bench/_fixtures';
import { hashMemoHits } from './_hash-memo';
import { buildManifest } from './build-manifest';
import { DirStore } from './dir-store';
import { pushCheckpoint } from './push-checkpoint';

const RUN = 'run-memo';

describe('hashes a file once per identity (device, inode, size, mtime, ctime)', () => {
  it('a second push of the same folder reads no file again, and pushes the same manifest', async () => {
    const work = useTempDir('soup-hash-memo-');
    const ck = writeCheckpoint({ root: work, step: 5, run: RUN });
    const first = await pushCheckpoint({
      store: new DirStore({ root: join(work, 'store-a') }),
      step: 5,
      dir: ck.dir,
      run: RUN,
      keepLocal: Infinity,
    });
    const hits = hashMemoHits();
    const second = await pushCheckpoint({
      store: new DirStore({ root: join(work, 'store-b') }),
      step: 5,
      dir: ck.dir,
      run: RUN,
      keepLocal: Infinity,
    });
    expect(hashMemoHits() - hits).toBe(Object.keys(ck.hashes).length);
    expect(second.manifestSha256).toBe(first.manifestSha256);
  });

  it('a file rewritten in place with its size and mtime put back is hashed again', async () => {
    const work = useTempDir('soup-hash-memo-');
    const ck = writeCheckpoint({ root: work, step: 6, run: RUN });
    const file = join(ck.dir, 'model.safetensors');
    const before = await buildManifest({ dir: ck.dir, step: 6, run: RUN });
    // `touch -r` copies the timestamps to the nanosecond, as `cp -p` or rsync would restore them.
    const stamp = join(work, 'stamp');
    execFileSync('touch', ['-r', file, stamp]);
    const mtimeNs = statSync(file, { bigint: true }).mtimeNs;
    // Same size, one byte different, the old mtime restored.
    const fd = openSync(file, 'r+');
    writeSync(fd, Buffer.from([readFileSync(file)[0]! ^ 0xff]), 0, 1, 0);
    closeSync(fd);
    execFileSync('touch', ['-r', stamp, file]);
    expect(statSync(file, { bigint: true }).mtimeNs).toBe(mtimeNs);
    const after = await buildManifest({ dir: ck.dir, step: 6, run: RUN });
    expect(after.manifest.files['model.safetensors']?.sha256).toBe(sha256(readFileSync(file)));
    expect(after.manifest.files['model.safetensors']?.sha256).not.toBe(
      before.manifest.files['model.safetensors']?.sha256,
    );
  });
});
