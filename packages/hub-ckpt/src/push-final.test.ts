import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeCheckpoint } from '../bench/_fixtures';
import { pushCheckpoint } from './push-checkpoint';
import { pushFinal } from './push-final';
import { pullCheckpoint } from './pull-checkpoint';
import { checkpointStatus } from './checkpoint-status';
import { VerifyError } from './errors';
import { resolveResume } from './resolve-resume';
import { makeTestStore, STORE_KINDS } from './_test-helpers';
import type { Pointer } from './types';

const RUN = 'run-f';

describe.each(STORE_KINDS)('pushFinal on %s store', (kind) => {
  it('pushes final/ and a terminal pointer after verifying, in two commits', async () => {
    const t = await makeTestStore(kind);
    const out = join(t.work, 'out');
    for (const step of [50, 100]) {
      const ck = writeCheckpoint({ root: out, step, run: RUN });
      await pushCheckpoint({ store: t.store, step, dir: ck.dir, run: RUN, keepLocal: Infinity });
    }
    const fin = writeCheckpoint({ root: join(t.work, 'final-src'), step: 120, run: RUN });
    const before = t.commits();
    const res = await pushFinal({ store: t.store, step: 120, dir: fin.dir, run: RUN, keepRemote: 1 });
    expect(res.commits).toBe(2);
    expect(t.commits() - before).toBe(2);
    expect(res.prunedRemote).toEqual(['ckpt/checkpoint-50']);
    const raw = await t.store.readFile({ path: 'latest.json' });
    const pointer = JSON.parse(new TextDecoder().decode(raw ?? new Uint8Array())) as Pointer;
    expect(pointer).toMatchObject({
      step: 120,
      path_in_repo: 'final',
      terminal: true,
      run: RUN,
      manifest_sha256: res.manifestSha256,
    });
    expect(await resolveResume({ store: t.reopen(), run: RUN })).toMatchObject({
      outcome: 'complete',
      step: 120,
      pathInRepo: 'final',
    });
    const pulled = await pullCheckpoint({
      store: t.reopen(),
      pathInRepo: 'final',
      dir: join(t.work, 'final-pulled'),
      expectedManifestSha256: pointer.manifest_sha256,
    });
    expect(pulled.step).toBe(120);
  });

  it('keepRemote 0 removes every ckpt/ folder once final/ is pointed at', async () => {
    const t = await makeTestStore(kind);
    const ck = writeCheckpoint({ root: t.work, step: 10, run: RUN });
    await pushCheckpoint({ store: t.store, step: 10, dir: ck.dir, run: RUN });
    const fin = writeCheckpoint({ root: join(t.work, 'f'), step: 20, run: RUN });
    await pushFinal({ store: t.store, step: 20, dir: fin.dir, run: RUN, keepRemote: 0 });
    expect(await t.store.list({ prefix: 'ckpt' })).toEqual([]);
    expect((await t.store.list({ prefix: 'final' })).length).toBe(5);
  });
});

describe.each(STORE_KINDS)('pushFinal of a trainer output folder on %s store', (kind) => {
  it("final/ holds the model files only: no checkpoint-*/, none of soup's bookkeeping; it verifies", async () => {
    const t = await makeTestStore(kind);
    const out = join(t.work, 'output');
    const ck = writeCheckpoint({ root: out, step: 31, run: RUN });
    await pushCheckpoint({ store: t.store, step: 31, dir: ck.dir, run: RUN, keepLocal: Infinity });
    writeCheckpoint({ root: out, step: 150, run: RUN });
    writeFileSync(join(out, 'model.safetensors'), 'weights');
    writeFileSync(join(out, 'trainer_state.json'), '{"global_step": 150}');
    writeFileSync(join(out, '.soup-run.lock'), '{"pid": 1}');
    mkdirSync(join(out, '.soup-stage-1-150'));
    writeFileSync(join(out, '.soup-stage-1-150', 'model.safetensors'), 'staged');
    const res = await pushFinal({ store: t.store, step: 150, dir: out, run: RUN });
    expect(res.fileCount).toBe(2);
    expect((await t.store.list({ prefix: 'final' })).map((e) => e.path)).toEqual([
      'final/manifest.json',
      'final/model.safetensors',
      'final/trainer_state.json',
    ]);
    expect(await resolveResume({ store: t.reopen(), run: RUN })).toMatchObject({ outcome: 'complete', step: 150 });
  });
});

describe('pushFinal that does not verify', () => {
  it('removes its own upload: status shows no final/, and the next push is not refused as another writer', async () => {
    const t = await makeTestStore('hub');
    const first = writeCheckpoint({ root: join(t.work, 'a'), step: 150, run: RUN });
    // The Hub stores altered bytes: its listing's blob id differs from the pushed file's, and verify refuses.
    t.server?.setFaults({ wrongStored: { count: 1, pathIncludes: 'trainer_state.json' } });
    await expect(pushFinal({ store: t.store, step: 150, dir: first.dir, run: RUN })).rejects.toBeInstanceOf(
      VerifyError,
    );
    expect(await t.store.list({ prefix: 'final' })).toEqual([]);
    expect((await checkpointStatus({ store: t.reopen() })).hasFinal).toBe(false);
    const second = writeCheckpoint({ root: join(t.work, 'b'), step: 150, run: RUN, salt: 'fixed' });
    const res = await pushFinal({ store: t.store, step: 150, dir: second.dir, run: RUN });
    expect(res.pathInRepo).toBe('final');
    expect(await resolveResume({ store: t.reopen(), run: RUN })).toMatchObject({ outcome: 'complete', step: 150 });
  });
});
