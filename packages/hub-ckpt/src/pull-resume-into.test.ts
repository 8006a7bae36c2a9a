import { useTempDir } from '@soup/test-utils';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sha256, writeCheckpoint } from '../bench/_fixtures';
import { CorruptCheckpointError, PullIntegrityError, PullTargetExistsError } from './errors';
import { pullResumeInto } from './pull-resume-into';
import { pushCheckpoint } from './push-checkpoint';
import { pushFinal } from './push-final';
import { makeTestStore, STORE_KINDS, type TestStore } from './_test-helpers';

const RUN = 'run-pri';

async function pushSteps(t: TestStore, steps: number[]): Promise<Record<number, Record<string, string>>> {
  const hashes: Record<number, Record<string, string>> = {};
  for (const step of steps) {
    const ck = writeCheckpoint({ root: join(t.work, 'out'), step, run: RUN });
    await pushCheckpoint({ store: t.store, step, dir: ck.dir, run: RUN, keepLocal: Infinity });
    hashes[step] = ck.hashes;
  }
  return hashes;
}

describe.each(STORE_KINDS)('pullResumeInto on %s store', (kind) => {
  it('pulls the pointed checkpoint into dest itself, every hash checked, no sibling left', async () => {
    const t = await makeTestStore(kind);
    const hashes = await pushSteps(t, [10, 20]);
    const parent = join(t.work, 'here');
    mkdirSync(parent, { recursive: true });
    const dest = join(parent, 'ckpt');
    const r = await pullResumeInto({ store: t.reopen(), run: RUN, dest });
    expect(r.dir).toBe(dest);
    expect(r.outcome).toMatchObject({ outcome: 'resume', step: 20, pathInRepo: 'ckpt/checkpoint-20', via: null });
    for (const [name, want] of Object.entries(hashes[20] ?? {}))
      expect(sha256(readFileSync(join(dest, name)))).toBe(want);
    expect(readdirSync(parent)).toEqual(['ckpt']);
  });

  it('a dest that exists is refused before anything is read, unless overwrite replaces it whole', async () => {
    const t = await makeTestStore(kind);
    await pushSteps(t, [10]);
    const dest = join(t.work, 'taken');
    mkdirSync(dest, { recursive: true });
    writeFileSync(join(dest, 'stale.bin'), 'old');
    const err = await pullResumeInto({ store: t.reopen(), run: RUN, dest }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PullTargetExistsError);
    expect((err as PullTargetExistsError).dir).toBe(dest);
    expect(readdirSync(dest)).toEqual(['stale.bin']);
    const r = await pullResumeInto({ store: t.reopen(), run: RUN, dest, overwrite: true });
    expect(r.dir).toBe(dest);
    expect(existsSync(join(dest, 'stale.bin'))).toBe(false);
    expect(existsSync(join(dest, 'model.safetensors'))).toBe(true);
  });

  it('without dest: reports that the checkpoint pulls cleanly and keeps nothing', async () => {
    const t = await makeTestStore(kind);
    await pushSteps(t, [10]);
    const r = await pullResumeInto({ store: t.reopen(), run: RUN, dest: null });
    expect(r.dir).toBeNull();
    expect(r.outcome).toMatchObject({ outcome: 'resume', step: 10 });
    if (r.outcome.outcome !== 'resume') throw new Error('unreachable');
    expect(existsSync(r.outcome.localDir)).toBe(false);
  });

  it('fresh and complete leave dest untouched; a corrupt checkpoint leaves neither dest nor sibling', async () => {
    const t = await makeTestStore(kind);
    const dest = join(useTempDir('soup-pri-'), 'ckpt');
    expect(await pullResumeInto({ store: t.store, run: RUN, dest })).toEqual({
      outcome: { outcome: 'fresh', reason: 'repo-missing' },
      dir: null,
    });
    await pushSteps(t, [10]);
    const ck = join(kind === 'dir' ? t.location : '', 'ckpt', 'checkpoint-10', 'model.safetensors');
    if (kind === 'dir') {
      const bytes = readFileSync(ck);
      bytes[100] = (bytes[100] ?? 0) ^ 0xff;
      writeFileSync(ck, bytes);
    } else t.server?.corruptAtRest(t.location, 'ckpt/checkpoint-10/model.safetensors');
    const err = await pullResumeInto({ store: t.reopen(), run: RUN, dest, fallback: false }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CorruptCheckpointError);
    expect(existsSync(dest)).toBe(false);
    expect(existsSync(`${dest}.soup-pull`)).toBe(false);
    const fin = writeCheckpoint({ root: join(t.work, 'fin'), step: 30, run: RUN });
    await pushFinal({ store: t.store, step: 30, dir: fin.dir, run: RUN });
    const done = await pullResumeInto({ store: t.reopen(), run: RUN, dest });
    expect(done).toMatchObject({ outcome: { outcome: 'complete', step: 30, pathInRepo: 'final' }, dir: null });
    expect(existsSync(dest)).toBe(false);
  });

  it('pullFinal: a complete run pulls its final/ into dest, checked against the pointer’s manifest', async () => {
    const t = await makeTestStore(kind);
    await pushSteps(t, [10]);
    const fin = writeCheckpoint({ root: join(t.work, 'fin'), step: 30, run: RUN });
    await pushFinal({ store: t.store, step: 30, dir: fin.dir, run: RUN });
    const dest = join(useTempDir('soup-pri-'), 'final');
    const done = await pullResumeInto({ store: t.reopen(), run: RUN, dest, pullFinal: true });
    expect(done).toMatchObject({ outcome: { outcome: 'complete', step: 30, pathInRepo: 'final' }, dir: dest });
    for (const [name, want] of Object.entries(fin.hashes)) expect(sha256(readFileSync(join(dest, name)))).toBe(want);
    // Without dest there is nothing to pull into; a dest that exists is refused as for a resume.
    expect(await pullResumeInto({ store: t.reopen(), run: RUN, dest: null, pullFinal: true })).toMatchObject({
      dir: null,
    });
    await expect(pullResumeInto({ store: t.reopen(), run: RUN, dest, pullFinal: true })).rejects.toBeInstanceOf(
      PullTargetExistsError,
    );
    // A final/ whose manifest is not the one the pointer names is refused, and dest stays as it was.
    if (kind === 'dir') {
      const manifest = join(t.location, 'final', 'manifest.json');
      writeFileSync(manifest, `${readFileSync(manifest, 'utf8')} `);
    } else t.server?.corruptAtRest(t.location, 'final/manifest.json');
    const again = join(useTempDir('soup-pri-'), 'final');
    // Refused as the pull's integrity failure (as `pullPointed` refuses it), not as a resume a fallback could save.
    const err = await pullResumeInto({ store: t.reopen(), run: RUN, dest: again, pullFinal: true }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(PullIntegrityError);
    expect((err as Error).message).toMatch(/^pull refused: .*final\/manifest\.json has sha256 .*, expected /);
    expect(existsSync(again)).toBe(false);
  });
});
