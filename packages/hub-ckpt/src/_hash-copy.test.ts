// The directory store's copy-and-hash: the kernel copies a source into the store's staging while a worker thread
// reads the copy behind it and hashes what it reads. The manifest's sha256 must be the hash of every byte the copy
// holds (never of a copy read before the kernel finished), several files at once must not share a worker's buffers,
// and a copy that cannot be made leaves nothing behind. A push must keep the staged copy for its commit: a copy that
// failed silently would send the push down the slower copy-again path with nothing to show for it.
import { createHash, randomFillSync } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runNode, useTempDir } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import type { DirStaging } from './_dir-staging';
import { DirStore } from './dir-store';
import { copyHashing } from './_hash-copy';

const MIB = 1024 * 1024;
const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

function randomFile(path: string, bytes: number): Buffer {
  const b = randomFillSync(Buffer.allocUnsafe(bytes));
  writeFileSync(path, b);
  return b;
}

describe('copyHashing', () => {
  it('hashes every byte of a copy of several chunks, and the copy is the source', async () => {
    const dir = useTempDir();
    // Larger than the worker's 4 MiB reads many times over: its first reads find the copy still being written.
    const bytes = randomFile(join(dir, 'model.bin'), 96 * MIB + 12_345);
    const got = await copyHashing(join(dir, 'model.bin'), join(dir, 'copy'));
    await got.landed;
    expect(got.sizeBytes).toBe(bytes.length);
    expect(got.sha256).toBe(sha256(bytes));
    expect(got.identityAfter).toBe(got.identityBefore);
    expect(readFileSync(join(dir, 'copy')).equals(bytes)).toBe(true);
  });

  it('gives a small file asked with its size its git blob id; files copied at once each their own', async () => {
    const dir = useTempDir();
    const sizes = [3 * MIB + 1, 9 * MIB, 17, 6 * MIB + 7, 0];
    const files = sizes.map((n, i) => randomFile(join(dir, `f${i}`), n));
    const got = await Promise.all(
      files.map((b, i) => copyHashing(join(dir, `f${i}`), join(dir, `c${i}`), i === 2 ? b.length : undefined)),
    );
    await Promise.all(got.map((g) => g.landed));
    expect(got.map((g) => g.sha256)).toEqual(files.map(sha256));
    expect(got.map((g) => g.sizeBytes)).toEqual(sizes);
    const blob = Buffer.concat([Buffer.from(`blob ${sizes[2]}\0`), files[2] as Buffer]);
    expect(got[2]?.gitSha1).toBe(createHash('sha1').update(blob).digest('hex'));
    expect(got[0]?.gitSha1).toBeUndefined();
    for (let i = 0; i < files.length; i++)
      expect(readFileSync(join(dir, `c${i}`)).equals(files[i] as Buffer)).toBe(true);
  });

  it('never overwrites: an existing copy is refused and kept; a missing source leaves no copy', async () => {
    const dir = useTempDir();
    randomFile(join(dir, 'src'), MIB);
    writeFileSync(join(dir, 'taken'), 'keep me');
    await expect(copyHashing(join(dir, 'src'), join(dir, 'taken'))).rejects.toMatchObject({ code: 'EEXIST' });
    expect(readFileSync(join(dir, 'taken'), 'utf8')).toBe('keep me');
    await expect(copyHashing(join(dir, 'missing'), join(dir, 'copy'))).rejects.toMatchObject({ code: 'ENOENT' });
    expect(existsSync(join(dir, 'copy'))).toBe(false);
  });
});

describe('a directory store staging a push', () => {
  it('keeps the staged copy of a large file for the commit, equal to the source', async () => {
    const dir = useTempDir();
    const bytes = randomFile(join(dir, 'optimizer.bin'), 40 * MIB + 3);
    const staging = new DirStore({ root: join(dir, 'store') }).openStaging() as DirStaging;
    try {
      const hash = await staging.hash(join(dir, 'optimizer.bin'));
      expect(hash.sha256).toBe(sha256(bytes));
      const taken = await staging.take(join(dir, 'optimizer.bin'));
      expect(taken?.hash.sha256).toBe(sha256(bytes));
      expect(readFileSync(taken?.tmp as string).equals(bytes)).toBe(true);
    } finally {
      await staging.close();
    }
  });
});

describe('the copy workers and the end of the process', () => {
  it('hold no process open: a staging opened and closed, or one copy made, and the process ends at once', async () => {
    const dir = useTempDir();
    randomFile(join(dir, 'model.bin'), MIB);
    const index = fileURLToPath(new URL('./index.ts', import.meta.url));
    // A push refused before its first copy (a dangling link) opens a staging and copies nothing; a CLI then just
    // returns from main() and expects the process to end.
    const scripts = {
      'nothing-copied.mts': `const staging = new DirStore({ root: ${JSON.stringify(join(dir, 'a'))} }).openStaging();`,
      'one-copy.mts':
        `const staging = new DirStore({ root: ${JSON.stringify(join(dir, 'b'))} }).openStaging();\n` +
        `await staging.hash(${JSON.stringify(join(dir, 'model.bin'))});`,
    };
    for (const [name, body] of Object.entries(scripts)) {
      writeFileSync(
        join(dir, name),
        `import { DirStore } from ${JSON.stringify(index)};\n${body}\nawait staging.close();\nconsole.log('done');\n`,
      );
      const t0 = performance.now();
      // From this package's folder, where `tsx` resolves.
      const cwd = fileURLToPath(new URL('..', import.meta.url));
      const r = await runNode(['--import', 'tsx', join(dir, name)], { cwd, timeoutMs: 20_000 });
      expect({ name, code: r.code, signal: r.signal, out: r.stdout.trim() }, r.stderr).toEqual({
        name,
        code: 0,
        signal: null,
        out: 'done',
      });
      expect(performance.now() - t0, name).toBeLessThan(15_000);
    }
  });
});
