import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeCheckpoint } from '../bench/_fixtures';
import { listRecord } from './checkpoint-records';
import { checkpointStatus } from './checkpoint-status';
import { listCheckpoints } from './list-checkpoints';
import { pushCheckpoint } from './push-checkpoint';
import { pushFinal } from './push-final';
import { makeTestStore, STORE_KINDS } from './_test-helpers';

const RUN = 'run-l';

describe.each(STORE_KINDS)('listCheckpoints on %s store', (kind) => {
  it('lists step, files, bytes and when pushed, counted as the push and checkpointStatus count', async () => {
    const t = await makeTestStore(kind);
    expect(await listCheckpoints({ store: t.store })).toEqual({ exists: false, checkpoints: [] });
    const before = Date.now() - 2000;
    const pushed = [];
    for (const step of [2, 4]) {
      const ck = writeCheckpoint({ root: join(t.work, 'src'), step, run: RUN, sizes: { modelBytes: 100 * step } });
      pushed.push(await pushCheckpoint({ store: t.store, step, dir: ck.dir, run: RUN }));
    }
    const fin = writeCheckpoint({ root: join(t.work, 'fin'), step: 4, run: RUN, sizes: { modelBytes: 50 } });
    const final = await pushFinal({ store: t.store, step: 4, dir: fin.dir, run: RUN });
    const list = await listCheckpoints({ store: t.store });
    expect(list.exists).toBe(true);
    expect(list.checkpoints.map(({ pushedAt: _, ...c }) => c)).toEqual([
      { step: 2, pathInRepo: 'ckpt/checkpoint-2', fileCount: pushed[0]!.fileCount, totalBytes: pushed[0]!.totalBytes },
      { step: 4, pathInRepo: 'ckpt/checkpoint-4', fileCount: pushed[1]!.fileCount, totalBytes: pushed[1]!.totalBytes },
      { step: null, pathInRepo: 'final', fileCount: final.fileCount, totalBytes: final.totalBytes },
    ]);
    for (const c of list.checkpoints) {
      const at = Date.parse(c.pushedAt ?? '');
      expect(at, c.pathInRepo).toBeGreaterThanOrEqual(before);
      expect(at, c.pathInRepo).toBeLessThanOrEqual(Date.now() + 2000);
    }
    expect(listRecord('s', list).checkpoints[0]).toEqual({
      step: 2,
      path_in_repo: 'ckpt/checkpoint-2',
      files: pushed[0]!.fileCount,
      bytes: pushed[0]!.totalBytes,
      pushed_at: list.checkpoints[0]!.pushedAt,
    });
    const status = await checkpointStatus({ store: t.store });
    expect(status.checkpoints.map((c) => [c.fileCount, c.totalBytes])).toEqual(
      pushed.map((p) => [p.fileCount, p.totalBytes]),
    );
  });
});
