import { useTempDir } from '@soup/test-utils';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sha256, writeCheckpoint } from '../bench/_fixtures';
import {
  ChecksumError,
  InvalidCheckpointOptionError,
  PullIntegrityError,
  PullTargetExistsError,
  StoreMissingError,
} from './errors';
import { pullPointed } from './pull-pointed';
import { pushCheckpoint } from './push-checkpoint';
import { pushFinal } from './push-final';
import { makeTestStore, STORE_KINDS, type TestStore } from './_test-helpers';

const RUN = 'run-pp';

async function pushSteps(t: TestStore, steps: number[]): Promise<Record<number, Record<string, string>>> {
  const hashes: Record<number, Record<string, string>> = {};
  for (const step of steps) {
    const ck = writeCheckpoint({ root: join(t.work, 'out'), step, run: RUN });
    await pushCheckpoint({ store: t.store, step, dir: ck.dir, run: RUN });
    hashes[step] = ck.hashes;
  }
  return hashes;
}

const expectFiles = (dir: string, hashes: Record<string, string> | undefined): void => {
  for (const [name, want] of Object.entries(hashes ?? {})) expect(sha256(readFileSync(join(dir, name)))).toBe(want);
};

describe.each(STORE_KINDS)('pullPointed on %s store', (kind) => {
  it('no step named: the checkpoint latest.json names, into dest itself; a step or final/ when named', async () => {
    const t = await makeTestStore(kind);
    const hashes = await pushSteps(t, [10, 20]);
    const parent = useTempDir('soup-pp-');
    const r = await pullPointed({ store: t.reopen(), dest: join(parent, 'latest') });
    expect(r).toMatchObject({ pathInRepo: 'ckpt/checkpoint-20', dir: join(parent, 'latest'), pulled: { step: 20 } });
    expectFiles(r.dir, hashes[20]);
    const older = await pullPointed({ store: t.reopen(), dest: join(parent, 'ten'), step: 10 });
    expect(older).toMatchObject({ pathInRepo: 'ckpt/checkpoint-10', dir: join(parent, 'ten'), pulled: { step: 10 } });
    expectFiles(older.dir, hashes[10]);
    expect(readdirSync(parent).sort()).toEqual(['latest', 'ten']);

    const fin = writeCheckpoint({ root: join(t.work, 'fin'), step: 30, run: RUN });
    await pushFinal({ store: t.store, step: 30, dir: fin.dir, run: RUN });
    // A terminal pointer: its final/ as it is (not through the resume path, which pulls nothing for a complete run).
    const done = await pullPointed({ store: t.reopen(), dest: join(parent, 'done') });
    expect(done).toMatchObject({ pathInRepo: 'final', dir: join(parent, 'done'), pulled: { step: 30 } });
    expectFiles(done.dir, fin.hashes);
    const named = await pullPointed({ store: t.reopen(), dest: join(parent, 'final'), step: 'final' });
    expect(named).toMatchObject({ pathInRepo: 'final', pulled: { step: 30 } });
  });

  it('refuses a store that does not exist, and a taken dest before reading (unless overwrite)', async () => {
    const t = await makeTestStore(kind);
    const dest = join(useTempDir('soup-pp-'), 'd');
    await expect(pullPointed({ store: t.store, dest })).rejects.toBeInstanceOf(StoreMissingError);
    await pushSteps(t, [10]);
    mkdirSync(dest);
    writeFileSync(join(dest, 'stale.bin'), 'old');
    const taken = await pullPointed({ store: t.reopen(), dest }).catch((e: unknown) => e);
    expect(taken).toBeInstanceOf(PullTargetExistsError);
    expect((taken as Error).message).toBe(
      `${dest} already exists: pass overwrite: true to replace it, or pull into an empty path.`,
    );
    expect(readdirSync(dest)).toEqual(['stale.bin']);
    const r = await pullPointed({ store: t.reopen(), dest, overwrite: true });
    expect(r.pulled.step).toBe(10);
    expect(existsSync(join(dest, 'stale.bin'))).toBe(false);
  });

  it('a pointed checkpoint corrupt at rest: refused as an integrity failure, no fallback, nothing left', async () => {
    const t = await makeTestStore(kind);
    await pushSteps(t, [10, 20]);
    if (kind === 'dir') {
      const file = join(t.location, 'ckpt', 'checkpoint-20', 'model.safetensors');
      const bytes = readFileSync(file);
      bytes[100] = (bytes[100] ?? 0) ^ 0xff;
      writeFileSync(file, bytes);
    } else t.server?.corruptAtRest(t.location, 'ckpt/checkpoint-20/model.safetensors');
    const dest = join(useTempDir('soup-pp-'), 'p');
    const err = await pullPointed({ store: t.reopen(), dest }).catch((e: unknown) => e);
    // A directory store's verify reads every byte, so the checkpoint is refused before the pull; on the Hub, the
    // LFS oid verifies and the pull's own hash catches it, which says so itself.
    if (kind === 'dir') {
      expect(err).toBeInstanceOf(PullIntegrityError);
      expect((err as PullIntegrityError).message).toMatch(
        /^pull refused: .*latest\.json names ckpt\/checkpoint-20 \(step 20\), which does not verify .*model\.safetensors/,
      );
      expect((err as PullIntegrityError).message).not.toMatch(/Refusing to resume/);
      expect((err as PullIntegrityError).cause).toMatchObject({ pathInRepo: 'ckpt/checkpoint-20' });
    } else {
      expect(err).toBeInstanceOf(ChecksumError);
      expect((err as ChecksumError).file).toBe('model.safetensors');
    }
    expect(existsSync(dest)).toBe(false);
    expect(existsSync(`${dest}.soup-pull`)).toBe(false);
  });
});

describe('pullPointed with no pointer to follow', () => {
  it('a store with checkpoints but no valid latest.json says how to name one', async () => {
    const t = await makeTestStore('dir');
    await pushSteps(t, [10]);
    rmSync(join(t.location, 'latest.json'));
    const dest = join(useTempDir('soup-pp-'), 'p');
    const err = await pullPointed({ store: t.reopen(), dest }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidCheckpointOptionError);
    expect((err as InvalidCheckpointOptionError).field).toBe('step');
    expect((err as Error).message).toBe(`${t.reopen().description} has no valid latest.json: pass a step or final`);
    writeFileSync(join(t.location, 'latest.json'), '{"step": "x"}');
    await expect(pullPointed({ store: t.reopen(), dest, stepFlag: '--step N', finalFlag: '--final' })).rejects.toThrow(
      /has no valid latest\.json: pass --step N or --final$/,
    );
    expect(existsSync(dest)).toBe(false);
  });
});
