import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeCheckpoint } from '../bench/_fixtures';
import { checkpointStatus } from './checkpoint-status';
import { statusRecord } from './checkpoint-records';
import { acquireLease } from './store-lease';
import { pushCheckpoint } from './push-checkpoint';
import { pushFinal } from './push-final';
import { makeTestStore, STORE_KINDS } from './_test-helpers';

describe.each(STORE_KINDS)('checkpointStatus on %s store', (kind) => {
  it('summarizes pointer, folders and final, and verifies on request', async () => {
    const t = await makeTestStore(kind);
    expect(await checkpointStatus({ store: t.store })).toMatchObject({
      exists: false,
      pointer: null,
      checkpoints: [],
      hasFinal: false,
    });
    for (const step of [10, 20]) {
      const ck = writeCheckpoint({ root: join(t.work, 'o'), step, run: 'r' });
      await pushCheckpoint({ store: t.store, step, dir: ck.dir, run: 'r', keepLocal: Infinity });
    }
    await t.store.commit({
      message: 'lose',
      operations: [{ kind: 'delete', path: 'ckpt/checkpoint-10/model.safetensors' }],
    });
    const s = await checkpointStatus({ store: t.reopen(), run: 'other', verify: 'all' });
    expect(s).toMatchObject({
      exists: true,
      hasPointer: true,
      runMatches: false,
      hasFinal: false,
      pointed: { verified: true, problems: [] },
    });
    expect(s.pointer?.step).toBe(20);
    expect(s.checkpoints.map((c) => [c.step, c.fileCount, c.hasManifest, c.verified])).toEqual([
      [10, 3, true, false],
      [20, 4, true, true],
    ]);
    const fin = writeCheckpoint({ root: join(t.work, 'f'), step: 30, run: 'r' });
    await pushFinal({ store: t.store, step: 30, dir: fin.dir, run: 'r' });
    const done = await checkpointStatus({ store: t.reopen(), run: 'r' });
    expect(done).toMatchObject({ hasFinal: true, runMatches: true });
    expect(done.pointer).toMatchObject({ terminal: true, path_in_repo: 'final' });
    expect(done.pointed).toBeUndefined();
  });

  it("names the store's lease with its id (what --take-over-lease takes), and none once released", async () => {
    const t = await makeTestStore(kind);
    const lease = await acquireLease({ store: t.store, run: 'r', autoRenew: false, host: 'vm-17' });
    const st = await checkpointStatus({ store: t.reopen() });
    expect(st.lease).toMatchObject({ id: lease.info.id, host: 'vm-17', pid: process.pid, run: 'r' });
    expect(statusRecord(st).lease).toEqual({
      id: lease.info.id,
      host: 'vm-17',
      pid: process.pid,
      run: 'r',
      since: lease.info.since,
      expires_at: lease.info.expires_at,
    });
    await lease.release();
    expect((await checkpointStatus({ store: t.reopen() })).lease).toBeNull();
  });
});
