import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runNode, useTempDir } from '@soup/test-utils';
import { DirStore } from './dir-store';
import { StoreError, UnsafePathError } from './errors';

describe('DirStore', () => {
  it('stages puts, renames them in after the commit point, then deletes; temp files are never listed', async () => {
    const root = join(useTempDir(), 'repo');
    const store = new DirStore({ root });
    expect(await store.exists()).toBe(false);
    await expect(store.commit({ message: 'x', operations: [] })).rejects.toBeInstanceOf(StoreError);
    await store.create();
    await store.commit({ message: 'one', operations: [{ kind: 'put', path: 'latest.json', bytes: Buffer.from('{"v":1}') }, { kind: 'put', path: 'a/b/old.bin', bytes: Buffer.from('old') }] });
    const seen: string[] = [];
    await store.commit({
      message: 'two',
      operations: [
        { kind: 'put', path: 'latest.json', bytes: Buffer.from('{"v":2}') },
        { kind: 'delete', path: 'a/b/old.bin' },
      ],
      onProgress: async (ev) => {
        const now = readFileSync(join(root, 'latest.json'), 'utf8');
        seen.push(`${ev.stage}${ev.stage === 'file' ? `:${ev.kind}:${ev.path}` : ''} -> ${now}`);
        if (ev.stage === 'commit') {
          // The new pointer is staged (and fsynced) but invisible until renamed; listings skip staging.
          expect((await store.list({ prefix: '' })).map((e) => e.path)).toEqual(['a/b/old.bin', 'latest.json']);
        }
      },
    });
    expect(seen).toEqual(['commit -> {"v":1}', 'file:put:latest.json -> {"v":2}', 'file:delete:a/b/old.bin -> {"v":2}']);
    expect(existsSync(join(root, 'a'))).toBe(false); // empty parents removed
    expect(readdirSync(root).sort()).toEqual(['.soup-staging', 'latest.json']);
    expect(readdirSync(join(root, '.soup-staging'))).toEqual([]);
  });

  it('cleans staging left by a writer that was killed, not by a live one', async () => {
    const root = join(useTempDir(), 'repo');
    const store = new DirStore({ root });
    await store.create();
    const dead = await runNode(['-e', 'console.log(process.pid)']);
    const deadPid = Number(dead.stdout.trim());
    mkdirSync(join(root, '.soup-staging', `${deadPid}-abc`), { recursive: true });
    writeFileSync(join(root, '.soup-staging', `${deadPid}-abc`, '0'), 'half a file');
    mkdirSync(join(root, '.soup-staging', `${process.ppid}-live`), { recursive: true });
    await store.commit({ message: 'x', operations: [{ kind: 'put', path: 'f', bytes: Buffer.from('1') }] });
    expect(readdirSync(join(root, '.soup-staging'))).toEqual([`${process.ppid}-live`]);
  });

  it('lists nothing for a missing prefix, reads null for a missing file, refuses unsafe paths', async () => {
    const root = join(useTempDir(), 'repo');
    const store = new DirStore({ root });
    await store.create();
    expect(await store.list({ prefix: 'ckpt' })).toEqual([]);
    expect(await store.readFile({ path: 'latest.json' })).toBeNull();
    expect(await store.hash({ path: 'nope' })).toBeNull();
    expect(await store.stat({ paths: ['nope', 'x/y'] })).toEqual([]);
    await expect(store.readFile({ path: '../outside' })).rejects.toBeInstanceOf(UnsafePathError);
    await expect(store.commit({ message: 'x', operations: [{ kind: 'put', path: 'a\\b', bytes: Buffer.from('') }] })).rejects.toBeInstanceOf(UnsafePathError);
    await expect(store.commit({ message: 'x', operations: [{ kind: 'delete', path: 'missing' }] })).rejects.toBeInstanceOf(StoreError);
  });
});
