// pushCheckpoint from a copy outside the trainer's folder (a snapshot): the ledger and keepLocal act on localRoot.
import { cpSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeCheckpoint } from '../bench/_fixtures';
import { pushCheckpoint } from './push-checkpoint';
import { makeTestStore } from './_test-helpers';

describe('pushCheckpoint with localRoot', () => {
  it("prunes the trainer's verified folders, never the copy's siblings; records the ledger in localRoot", async () => {
    const t = await makeTestStore('dir');
    const out = join(t.work, 'out');
    const ck10 = writeCheckpoint({ root: out, step: 10, run: 'r' });
    const ck20 = writeCheckpoint({ root: out, step: 20, run: 'r' });
    await pushCheckpoint({ store: t.store, step: 10, dir: ck10.dir, run: 'r' });
    const snaps = join(out, '.snapshots');
    cpSync(ck20.dir, join(snaps, 'checkpoint-20'), { recursive: true });
    cpSync(ck10.dir, join(snaps, 'checkpoint-15'), { recursive: true });
    const r = await pushCheckpoint({
      store: t.store,
      step: 20,
      dir: join(snaps, 'checkpoint-20'),
      run: 'r',
      keepLocal: 1,
      localRoot: out,
    });
    expect(r.prunedLocal).toEqual([ck10.dir]);
    expect(existsSync(join(snaps, 'checkpoint-15'))).toBe(true);
    expect(existsSync(join(snaps, '.soup-verified.json'))).toBe(false);
    expect(Object.keys(JSON.parse(readFileSync(join(out, '.soup-verified.json'), 'utf8')))).toEqual(['10', '20']);
  });
});
