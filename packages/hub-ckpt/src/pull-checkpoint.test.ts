import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { seededBytes, sha256, writeCheckpoint } from '../bench/_fixtures';
import {
  ChecksumError,
  CorruptCheckpointError,
  PullTargetExistsError,
  StoreMissingError,
  UnsafePathError,
} from './errors';
import { pullCheckpoint } from './pull-checkpoint';
import { pushCheckpoint } from './push-checkpoint';
import { makeTestStore, STORE_KINDS } from './_test-helpers';

const RUN = 'run-p';

describe.each(STORE_KINDS)('pullCheckpoint on %s store', (kind) => {
  it('downloads every file through <dir>.incomplete, checks each sha256, then renames', async () => {
    const t = await makeTestStore(kind);
    const ck = writeCheckpoint({ root: join(t.work, 'src'), step: 40, run: RUN, sizes: { modelBytes: 300_000 } });
    const pushed = await pushCheckpoint({ store: t.store, step: 40, dir: ck.dir, run: RUN });
    const target = join(t.work, 'cold', 'checkpoint-40');
    const seen: string[] = [];
    const res = await pullCheckpoint({
      store: t.reopen(),
      pathInRepo: 'ckpt/checkpoint-40',
      dir: target,
      expectedManifestSha256: pushed.manifestSha256,
      onFile: (e) => {
        seen.push(e.name);
        // While downloading, only the staging folder exists.
        expect(existsSync(`${target}.incomplete`)).toBe(true);
        expect(existsSync(target)).toBe(false);
      },
    });
    expect(res).toMatchObject({ dir: target, step: 40, fileCount: 4, manifestSha256: pushed.manifestSha256 });
    expect(seen.sort()).toEqual(Object.keys(ck.hashes).sort());
    for (const [name, want] of Object.entries(ck.hashes)) expect(sha256(readFileSync(join(target, name)))).toBe(want);
    expect(JSON.parse(readFileSync(join(target, 'manifest.json'), 'utf8'))).toMatchObject({ step: 40, run: RUN });
    expect(existsSync(`${target}.incomplete`)).toBe(false);
  });

  it('a store never pushed to is said not to exist; an existing one without the folder says the folder', async () => {
    const t = await makeTestStore(kind);
    const dir = join(t.work, 'cold', 'x');
    const missing = pullCheckpoint({ store: t.store, pathInRepo: 'ckpt/checkpoint-3', dir });
    await expect(missing).rejects.toThrow(StoreMissingError);
    await expect(missing).rejects.toThrow(`${t.store.description} does not exist: nothing was ever pushed there`);
    const ck = writeCheckpoint({ root: join(t.work, 'src'), step: 4, run: RUN, sizes: { modelBytes: 100 } });
    await pushCheckpoint({ store: t.store, step: 4, dir: ck.dir, run: RUN });
    await expect(pullCheckpoint({ store: t.store, pathInRepo: 'ckpt/checkpoint-3', dir })).rejects.toThrow(
      'ckpt/checkpoint-3/manifest.json is missing; nothing to pull.',
    );
  });

  it.each([
    ['../evil.bin', 'parent segment'],
    ['/etc/evil.bin', 'absolute path'],
    ['sub\\..\\evil.bin', 'backslash'],
    ['C:/evil.bin', 'drive path'],
  ])('refuses the manifest name %j (%s) before writing anything', async (name) => {
    const t = await makeTestStore(kind);
    await t.store.create();
    const manifest = {
      step: 5,
      run: RUN,
      files: { 'model.safetensors': { size: 1, sha256: 'a'.repeat(64) }, [name]: { size: 1, sha256: 'b'.repeat(64) } },
    };
    await t.store.commit({
      message: 'evil manifest',
      operations: [
        { kind: 'put', path: 'ckpt/checkpoint-5/manifest.json', bytes: Buffer.from(JSON.stringify(manifest)) },
      ],
    });
    const parent = join(t.work, 'pull-here');
    mkdirSync(parent, { recursive: true });
    const err = await pullCheckpoint({
      store: t.store,
      pathInRepo: 'ckpt/checkpoint-5',
      dir: join(parent, 'ck'),
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnsafePathError);
    expect((err as UnsafePathError).path).toBe(name);
    expect(readdirSync(parent)).toEqual([]);
    expect(existsSync(join(t.work, 'evil.bin'))).toBe(false);
  });

  it('a file whose bytes differ from the manifest -> ChecksumError, nothing moved into place', async () => {
    const t = await makeTestStore(kind);
    const ck = writeCheckpoint({ root: join(t.work, 'src'), step: 7, run: RUN });
    await pushCheckpoint({ store: t.store, step: 7, dir: ck.dir, run: RUN });
    await t.store.commit({
      message: 'tamper',
      operations: [{ kind: 'put', path: 'ckpt/checkpoint-7/optimizer.safetensors', bytes: seededBytes('x', 16_000) }],
    });
    const target = join(t.work, 'cold', 'ck');
    const err = await pullCheckpoint({ store: t.reopen(), pathInRepo: 'ckpt/checkpoint-7', dir: target }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ChecksumError);
    expect((err as ChecksumError).file).toBe('optimizer.safetensors');
    expect((err as ChecksumError).expectedSha256).toBe(ck.hashes['optimizer.safetensors']);
    expect(existsSync(target)).toBe(false);
    expect(existsSync(`${target}.incomplete`)).toBe(false);
  });

  it('an existing target is refused unless overwrite; a stale .incomplete is replaced', async () => {
    const t = await makeTestStore(kind);
    const ck = writeCheckpoint({ root: join(t.work, 'src'), step: 3, run: RUN });
    await pushCheckpoint({ store: t.store, step: 3, dir: ck.dir, run: RUN });
    const target = join(t.work, 'cold', 'ck');
    mkdirSync(target, { recursive: true });
    writeFileSync(join(target, 'old.txt'), 'old');
    await expect(
      pullCheckpoint({ store: t.store, pathInRepo: 'ckpt/checkpoint-3', dir: target }),
    ).rejects.toBeInstanceOf(PullTargetExistsError);
    mkdirSync(`${target}.incomplete`, { recursive: true });
    writeFileSync(join(`${target}.incomplete`, 'junk'), 'from a killed pull');
    await pullCheckpoint({ store: t.store, pathInRepo: 'ckpt/checkpoint-3', dir: target, overwrite: true });
    expect(readdirSync(target).sort()).toEqual([
      'extra',
      'manifest.json',
      'model.safetensors',
      'optimizer.safetensors',
      'trainer_state.json',
    ]);
    expect(readdirSync(dirname(target))).toEqual(['ck']);
  });

  it('a manifest other than the expected one -> CorruptCheckpointError', async () => {
    const t = await makeTestStore(kind);
    const ck = writeCheckpoint({ root: join(t.work, 'src'), step: 2, run: RUN });
    await pushCheckpoint({ store: t.store, step: 2, dir: ck.dir, run: RUN });
    const err = await pullCheckpoint({
      store: t.store,
      pathInRepo: 'ckpt/checkpoint-2',
      dir: join(t.work, 'x'),
      expectedManifestSha256: 'f'.repeat(64),
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CorruptCheckpointError);
    expect(existsSync(join(t.work, 'x.incomplete'))).toBe(false);
  });
});
