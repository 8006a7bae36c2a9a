import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeCheckpoint } from '../bench/_fixtures';
import { pushCheckpoint } from './push-checkpoint';
import { pushFinal } from './push-final';
import { pullCheckpoint } from './pull-checkpoint';
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
