import { describe, expect, it } from 'vitest';
import { writeCheckpoint } from '../bench/_fixtures';
import { checkpointStatus } from './checkpoint-status';
import { pushCheckpoint } from './push-checkpoint';
import { makeTestStore } from './_test-helpers';

const RUN = 'run-squash';
const SIZES = { modelBytes: 20_000, optimizerBytes: 8_000 };

async function fiftyPushes(
  squashHistory: boolean,
): Promise<{ stored: number; tree: number; one: number; statusStored: number | null; squashes: number }> {
  const t = await makeTestStore('hub');
  let one = 0;
  for (let i = 1; i <= 50; i++) {
    const ck = writeCheckpoint({ root: t.work, step: i * 10, run: RUN, sizes: SIZES });
    const r = await pushCheckpoint({
      store: t.store,
      step: i * 10,
      dir: ck.dir,
      run: RUN,
      keepLocal: 1,
      keepRemote: 3,
      squashHistory,
    });
    one = r.totalBytes;
  }
  const status = await checkpointStatus({ store: t.store });
  expect(status.checkpoints.map((c) => c.step)).toEqual([480, 490, 500]);
  expect(status.pointer?.step).toBe(500);
  const stored = t.server?.storageBytes(t.location) ?? -1;
  console.log(
    `50 pushes keeping 3, squashHistory ${squashHistory}: stored ${stored} bytes, tree ${status.treeBytes}` +
      ` bytes, one checkpoint ${one} bytes (${(stored / one).toFixed(2)} x)`,
  );
  return {
    stored,
    tree: status.treeBytes,
    one,
    statusStored: status.storedBytes,
    squashes: t.server?.squashCount(t.location) ?? -1,
  };
}

describe('bounded storage on the Hub: prune + super-squash', { timeout: 240_000 }, () => {
  it(
    '50 checkpoints keeping 3, with squashHistory, end with stored bytes <= 5 x one checkpoint; the ' +
      'pointer stays verified',
    async () => {
      const r = await fiftyPushes(true);
      expect(r.squashes).toBe(47);
      expect(r.statusStored).toBe(r.stored);
      expect(r.stored).toBeLessThanOrEqual(5 * r.one);
      expect(r.stored).toBeGreaterThanOrEqual(3 * r.one);
    },
  );

  it(
    'without squash, pruning frees no storage and soup ckpt status reports the growth (stored bytes ' +
      '>> tree bytes)',
    async () => {
      const r = await fiftyPushes(false);
      expect(r.squashes).toBe(0);
      expect(r.statusStored).toBe(r.stored);
      expect(r.stored).toBeGreaterThanOrEqual(50 * r.one);
      expect(r.tree).toBeLessThanOrEqual(3 * r.one + 3 * 2_000);
    },
  );
});
