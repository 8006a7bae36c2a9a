import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runNode, useTempDir } from '@soup/test-utils';
import { DirStore } from './dir-store';
import { LinkedEntryError, StoreError, UnsafePathError } from './errors';
import { writeCheckpoint } from '../bench/_fixtures';
import { pushCheckpoint } from './push-checkpoint';
import { pullResume } from './pull-resume';
import { checkpointStatus } from './checkpoint-status';

/** Every file under `dir` with its bytes, for byte-for-byte comparison. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (abs: string, rel: string): void => {
    for (const e of readdirSync(abs, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(join(abs, e.name), r);
      else out[r] = readFileSync(join(abs, e.name)).toString('base64');
    }
  };
  walk(dir, '');
  return out;
}

describe('DirStore', () => {
  it('stages puts, renames them in after the commit point, then deletes; temp files are never listed', async () => {
    const root = join(useTempDir(), 'repo');
    const store = new DirStore({ root });
    expect(await store.exists()).toBe(false);
    await expect(store.commit({ message: 'x', operations: [] })).rejects.toBeInstanceOf(StoreError);
    await store.create();
    await store.commit({
      message: 'one',
      operations: [
        { kind: 'put', path: 'latest.json', bytes: Buffer.from('{"v":1}') },
        { kind: 'put', path: 'a/b/old.bin', bytes: Buffer.from('old') },
      ],
    });
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
    expect(seen).toEqual([
      'commit -> {"v":1}',
      'file:put:latest.json -> {"v":2}',
      'file:delete:a/b/old.bin -> {"v":2}',
    ]);
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
    await expect(
      store.commit({ message: 'x', operations: [{ kind: 'put', path: 'a\\b', bytes: Buffer.from('') }] }),
    ).rejects.toBeInstanceOf(UnsafePathError);
    await expect(
      store.commit({ message: 'x', operations: [{ kind: 'delete', path: 'missing' }] }),
    ).rejects.toBeInstanceOf(StoreError);
  });

  it(
    'never follows a symlink: a linked checkpoint folder is refused and the victim outside the store ' +
      'is untouched, byte for byte',
    async () => {
      const tmp = useTempDir();
      const root = join(tmp, 'store');
      const store = new DirStore({ root });
      const out = join(tmp, 'out');
      // leg 1 to step 10
      await pushCheckpoint({ store, step: 10, dir: writeCheckpoint({ root: out, step: 10, run: 'r' }).dir, run: 'r' });
      // the victim: a folder outside the store, shaped like a checkpoint
      const victim = join(tmp, 'victim');
      mkdirSync(join(victim, 'extra'), { recursive: true });
      writeFileSync(join(victim, 'model.safetensors'), 'precious weights');
      writeFileSync(join(victim, 'keep.txt'), 'do not delete');
      writeFileSync(join(victim, 'extra', 'rng_state.json'), '{}');
      const before = snapshot(victim);
      symlinkSync(victim, join(root, 'ckpt', 'checkpoint-15'));
      // resume, then push step 15 (what `--stop-after-steps 5` does)
      await expect(pullResume({ store, run: 'r', dir: join(tmp, 'resume') })).rejects.toBeInstanceOf(LinkedEntryError);
      const err = await pushCheckpoint({
        store,
        step: 15,
        dir: writeCheckpoint({ root: out, step: 15, run: 'r' }).dir,
        run: 'r',
      }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(LinkedEntryError);
      expect((err as LinkedEntryError).path).toBe(join(root, 'ckpt', 'checkpoint-15'));
      expect((err as Error).message).toMatch(/symbolic link inside a directory store; refusing to follow it/);
      expect(snapshot(victim)).toEqual(before);
      // status does not claim step 15 is there; the pointer still names step 10
      await expect(checkpointStatus({ store, verify: true })).rejects.toBeInstanceOf(LinkedEntryError);
      expect(JSON.parse(readFileSync(join(root, 'latest.json'), 'utf8'))).toMatchObject({ step: 10 });
      // every entry point refuses the link: read, stat, hash, download, delete, put
      await expect(store.readFile({ path: 'ckpt/checkpoint-15/keep.txt' })).rejects.toBeInstanceOf(LinkedEntryError);
      await expect(store.stat({ paths: ['ckpt/checkpoint-15/keep.txt'] })).rejects.toBeInstanceOf(LinkedEntryError);
      await expect(store.hash({ path: 'ckpt/checkpoint-15/keep.txt' })).rejects.toBeInstanceOf(LinkedEntryError);
      await expect(
        store.download({ path: 'ckpt/checkpoint-15/keep.txt', dest: join(tmp, 'dl') }),
      ).rejects.toBeInstanceOf(LinkedEntryError);
      await expect(
        store.commit({ message: 'x', operations: [{ kind: 'delete', path: 'ckpt/checkpoint-15/keep.txt' }] }),
      ).rejects.toBeInstanceOf(LinkedEntryError);
      await expect(
        store.commit({
          message: 'x',
          operations: [{ kind: 'put', path: 'ckpt/checkpoint-15/keep.txt', bytes: Buffer.from('overwritten') }],
        }),
      ).rejects.toBeInstanceOf(LinkedEntryError);
      expect(snapshot(victim)).toEqual(before);
    },
  );

  it('a linked file (latest.json -> outside) is refused, not read or replaced', async () => {
    const tmp = useTempDir();
    const root = join(tmp, 'store');
    const store = new DirStore({ root });
    await store.create();
    const outside = join(tmp, 'outside.json');
    writeFileSync(outside, '{"secret":true}');
    symlinkSync(outside, join(root, 'latest.json'));
    await expect(store.readFile({ path: 'latest.json' })).rejects.toBeInstanceOf(LinkedEntryError);
    await expect(store.list({ prefix: '' })).rejects.toBeInstanceOf(LinkedEntryError);
    await expect(
      store.commit({ message: 'p', operations: [{ kind: 'put', path: 'latest.json', bytes: Buffer.from('{}') }] }),
    ).rejects.toBeInstanceOf(LinkedEntryError);
    expect(readFileSync(outside, 'utf8')).toBe('{"secret":true}');
  });
});
