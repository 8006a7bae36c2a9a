import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sha256, writeCheckpoint } from '../bench/_fixtures';
import {
  ConcurrentWriteError,
  InvalidCheckpointOptionError,
  PointedCheckpointConflictError,
  PointerRegressionError,
  StaleRunError,
  VerifyError,
} from './errors';
import { pushFinal } from './push-final';
import { pushCheckpoint } from './push-checkpoint';
import { makeTestStore, STORE_KINDS } from './_test-helpers';
import type { CheckpointStore, Manifest, Pointer, StoreCommitParams } from './types';
import type { PushPhase } from './_push';

const RUN = 'run-a';

async function readJson<T>(store: CheckpointStore, path: string): Promise<T> {
  const raw = await store.readFile({ path });
  expect(raw, `${path} should exist`).not.toBeNull();
  return JSON.parse(new TextDecoder().decode(raw ?? new Uint8Array())) as T;
}

describe.each(STORE_KINDS)('pushCheckpoint on %s store', (kind) => {
  it('uploads folder + manifest, verifies, then moves the pointer, in two commits', async () => {
    const t = await makeTestStore(kind);
    const ck = writeCheckpoint({ root: t.work, step: 10, run: RUN });
    const phases: PushPhase[] = [];
    const res = await pushCheckpoint({
      store: t.store,
      step: 10,
      dir: ck.dir,
      run: RUN,
      onPhase: (e) => void phases.push(e.phase),
    });

    const uniq = phases.filter((p, i) => p !== phases[i - 1]);
    expect(uniq).toEqual(['hash', 'upload', 'uploaded', 'verified', 'pointer', 'pointed', 'done']);
    expect(res.commits).toBe(2);
    expect(t.commits()).toBe(2);
    if (t.server) expect(t.server.commitCount(t.location)).toBe(2);
    expect(res.fileCount).toBe(4);

    const manifest = await readJson<Manifest>(t.store, 'ckpt/checkpoint-10/manifest.json');
    expect(manifest.step).toBe(10);
    expect(manifest.run).toBe(RUN);
    expect(Object.fromEntries(Object.entries(manifest.files).map(([n, f]) => [n, f.sha256]))).toEqual(ck.hashes);
    const pointer = await readJson<Pointer>(t.store, 'latest.json');
    expect(pointer).toMatchObject({
      step: 10,
      path_in_repo: 'ckpt/checkpoint-10',
      run: RUN,
      terminal: false,
      manifest_sha256: res.manifestSha256,
    });
    const rawManifest = await t.store.readFile({ path: 'ckpt/checkpoint-10/manifest.json' });
    expect(sha256(rawManifest ?? new Uint8Array())).toBe(pointer.manifest_sha256);
    // Every remote file hash-matches the local one.
    for (const [name, want] of Object.entries(ck.hashes)) {
      expect((await t.store.hash({ path: `ckpt/checkpoint-10/${name}` }))?.sha256).toBe(want);
    }
  });

  it(
    'keeps every local folder by default, prunes remote beyond keepRemote (at least 2), never the ' + 'pointed one',
    async () => {
      const t = await makeTestStore(kind);
      const out = join(t.work, 'out');
      for (const step of [10, 20, 30]) {
        const ck = writeCheckpoint({ root: out, step, run: RUN });
        const res = await pushCheckpoint({ store: t.store, step, dir: ck.dir, run: RUN, keepRemote: 2 });
        expect(res.commits).toBe(2);
        expect(res.prunedLocal).toEqual([]);
      }
      expect(readdirSync(out).sort()).toEqual([
        '.soup-verified.json',
        'checkpoint-10',
        'checkpoint-20',
        'checkpoint-30',
      ]);
      const folders = new Set((await t.store.list({ prefix: 'ckpt' })).map((e) => e.path.split('/')[1]));
      expect([...folders].sort()).toEqual(['checkpoint-20', 'checkpoint-30']);
      expect(t.commits()).toBe(6);

      const ck40 = writeCheckpoint({ root: out, step: 40, run: RUN });
      await expect(
        pushCheckpoint({ store: t.store, step: 40, dir: ck40.dir, run: RUN, keepRemote: 1 }),
      ).rejects.toBeInstanceOf(InvalidCheckpointOptionError);
      const res = await pushCheckpoint({
        store: t.store,
        step: 40,
        dir: ck40.dir,
        run: RUN,
        keepRemote: 2,
        keepLocal: 2,
      });
      expect(res.prunedRemote.sort()).toEqual(['ckpt/checkpoint-20']);
      expect(readdirSync(out).sort()).toEqual(['.soup-verified.json', 'checkpoint-30', 'checkpoint-40']);
      const left = new Set((await t.store.list({ prefix: 'ckpt' })).map((e) => e.path.split('/')[1]));
      expect([...left].sort()).toEqual(['checkpoint-30', 'checkpoint-40']);
      expect((await readJson<Pointer>(t.store, 'latest.json')).step).toBe(40);
    },
  );

  it('local prune never deletes a folder that no verified push took', async () => {
    const t = await makeTestStore(kind);
    const out = join(t.work, 'out');
    writeCheckpoint({ root: out, step: 100, run: RUN }); // the trainer wrote it; no push took it
    const ck120 = writeCheckpoint({ root: out, step: 120, run: RUN });
    const lines: string[] = [];
    const res = await pushCheckpoint({
      store: t.store,
      step: 120,
      dir: ck120.dir,
      run: RUN,
      keepLocal: 1,
      logger: { info: (l) => lines.push(l) },
    });
    expect(res.prunedLocal).toEqual([]);
    expect(readdirSync(out).sort()).toEqual(['.soup-verified.json', 'checkpoint-100', 'checkpoint-120']);
    expect(lines.some((l) => /kept local checkpoint-100: no verified push/.test(l))).toBe(true);
  });

  it(
    'an aborted signal stops the push between files: the pointer does not move and no staged file is ' + 'left',
    async () => {
      const t = await makeTestStore(kind);
      const out = join(t.work, 'out');
      await pushCheckpoint({
        store: t.store,
        step: 10,
        dir: writeCheckpoint({ root: out, step: 10, run: RUN }).dir,
        run: RUN,
      });
      const before = await t.store.readFile({ path: 'latest.json' });
      for (const at of ['hash', 'uploaded', 'verified'] as const) {
        const ac = new AbortController();
        const err = await pushCheckpoint({
          store: t.store,
          step: 20,
          dir: writeCheckpoint({ root: out, step: 20, run: RUN }).dir,
          run: RUN,
          signal: ac.signal,
          onPhase: (e) => {
            if (e.phase === at) ac.abort(new Error(`stop at ${at}`));
          },
        }).catch((e: unknown) => e);
        expect((err as Error).message).toBe(`stop at ${at}`);
        expect(Buffer.from((await t.store.readFile({ path: 'latest.json' })) ?? [])).toEqual(Buffer.from(before ?? []));
      }
      if (kind === 'dir') expect(readdirSync(join(t.location, '.soup-staging'))).toEqual([]);
      const ac = new AbortController();
      ac.abort(new Error('already aborted'));
      await expect(
        pushCheckpoint({
          store: t.store,
          step: 30,
          dir: writeCheckpoint({ root: out, step: 30, run: RUN }).dir,
          run: RUN,
          signal: ac.signal,
        }),
      ).rejects.toThrow('already aborted');
      expect((await t.store.list({ prefix: 'ckpt/checkpoint-30' })).length).toBe(0);
    },
  );

  it(
    'a second writer that moved latest.json after this push read it is named; the pointer is not ' + 'overwritten',
    async () => {
      const t = await makeTestStore(kind);
      await pushCheckpoint({
        store: t.store,
        step: 10,
        dir: writeCheckpoint({ root: join(t.work, 'a'), step: 10, run: RUN }).dir,
        run: RUN,
      });
      const other = writeCheckpoint({ root: join(t.work, 'b'), step: 30, run: RUN });
      const err = await pushCheckpoint({
        store: t.store,
        step: 20,
        dir: writeCheckpoint({ root: join(t.work, 'a'), step: 20, run: RUN }).dir,
        run: RUN,
        onPhase: async (e) => {
          if (e.phase === 'verified') await pushCheckpoint({ store: t.reopen(), step: 30, dir: other.dir, run: RUN });
        },
      }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConcurrentWriteError);
      expect((err as ConcurrentWriteError).writer).toMatch(/run "run-a" at step 30/);
      expect((await readJson<Pointer>(t.store, 'latest.json')).step).toBe(30);
    },
  );

  it('the pointer never moves to a lower step nor off a terminal checkpoint unless forced', async () => {
    const t = await makeTestStore(kind);
    const out = join(t.work, 'out');
    for (const step of [10, 20])
      await pushCheckpoint({ store: t.store, step, dir: writeCheckpoint({ root: out, step, run: RUN }).dir, run: RUN });
    const ck5 = writeCheckpoint({ root: join(t.work, 'x'), step: 5, run: RUN });
    const before = await t.store.readFile({ path: 'latest.json' });
    const err = await pushCheckpoint({ store: t.store, step: 5, dir: ck5.dir, run: RUN }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PointerRegressionError);
    expect((err as Error).message).toMatch(/names ckpt\/checkpoint-20 \(step 20\).*backwards.*force/);
    expect(Buffer.from((await t.store.readFile({ path: 'latest.json' })) ?? [])).toEqual(Buffer.from(before ?? []));
    expect((await t.store.list({ prefix: 'ckpt/checkpoint-5' })).length).toBe(0); // refused before any upload

    await pushFinal({
      store: t.store,
      step: 30,
      dir: writeCheckpoint({ root: join(t.work, 'fin'), step: 30, run: RUN }).dir,
      run: RUN,
    });
    const ck40 = writeCheckpoint({ root: out, step: 40, run: RUN });
    const off = await pushCheckpoint({ store: t.store, step: 40, dir: ck40.dir, run: RUN }).catch((e: unknown) => e);
    expect(off).toBeInstanceOf(PointerRegressionError);
    expect((await readJson<Pointer>(t.store, 'latest.json')).terminal).toBe(true);

    await pushCheckpoint({ store: t.store, step: 5, dir: ck5.dir, run: RUN, force: true });
    expect(await readJson<Pointer>(t.store, 'latest.json')).toMatchObject({ step: 5, terminal: false });
  });

  it(
    'leaves remote folders newer than the pushed step alone (a diverged attempt) and keeps the ' + 'pointed one',
    async () => {
      const t = await makeTestStore(kind);
      const out = join(t.work, 'out');
      const ck50 = writeCheckpoint({ root: join(t.work, 'other'), step: 50, run: RUN });
      await t.store.create();
      await t.store.commit({
        message: 'leftover',
        operations: [
          { kind: 'put', path: 'ckpt/checkpoint-50/model.safetensors', localPath: join(ck50.dir, 'model.safetensors') },
        ],
      });
      for (const step of [10, 20, 30]) {
        const ck = writeCheckpoint({ root: out, step, run: RUN });
        await pushCheckpoint({ store: t.store, step, dir: ck.dir, run: RUN, keepRemote: 2 });
      }
      const left = [...new Set((await t.store.list({ prefix: 'ckpt' })).map((e) => e.path.split('/')[1]))].sort();
      expect(left).toEqual(['checkpoint-20', 'checkpoint-30', 'checkpoint-50']);
    },
  );

  it("refuses to move another run's pointer, naming both runs", async () => {
    const t = await makeTestStore(kind);
    const a = writeCheckpoint({ root: t.work, step: 10, run: 'run-one' });
    await pushCheckpoint({ store: t.store, step: 10, dir: a.dir, run: 'run-one' });
    const b = writeCheckpoint({ root: join(t.work, 'b'), step: 20, run: 'run-two' });
    const err = await pushCheckpoint({ store: t.store, step: 20, dir: b.dir, run: 'run-two' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StaleRunError);
    expect((err as StaleRunError).message).toContain('run-one');
    expect((err as StaleRunError).message).toContain('run-two');
    expect((err as StaleRunError).code).toBe('SOUP_HUB_CKPT_STALE_RUN');
    expect((await readJson<Pointer>(t.store, 'latest.json')).run).toBe('run-one');
    expect(await t.store.list({ prefix: 'ckpt/checkpoint-20' })).toEqual([]);
  });

  it('re-pushing the pointed checkpoint is a verified no-op; different content there is refused', async () => {
    const t = await makeTestStore(kind);
    const ck = writeCheckpoint({ root: t.work, step: 10, run: RUN });
    await pushCheckpoint({ store: t.store, step: 10, dir: ck.dir, run: RUN, keepLocal: Infinity });
    const again = await pushCheckpoint({ store: t.store, step: 10, dir: ck.dir, run: RUN, keepLocal: Infinity });
    expect(again.commits).toBe(0);
    expect(t.commits()).toBe(2);
    const other = writeCheckpoint({ root: join(t.work, 'x'), step: 10, run: 'tweaked' });
    await expect(pushCheckpoint({ store: t.store, step: 10, dir: other.dir, run: RUN })).rejects.toBeInstanceOf(
      PointedCheckpointConflictError,
    );
  });

  it('a store that loses a file fails verify and never moves the pointer', async () => {
    const t = await makeTestStore(kind);
    const ck10 = writeCheckpoint({ root: t.work, step: 10, run: RUN });
    await pushCheckpoint({ store: t.store, step: 10, dir: ck10.dir, run: RUN });
    // A fake store in front of the real one that silently drops the optimizer file from data commits.
    const lossy: CheckpointStore = Object.assign(Object.create(null) as object, t.store, {
      commit: (p: StoreCommitParams) =>
        t.store.commit({ ...p, operations: p.operations.filter((op) => !op.path.endsWith('optimizer.safetensors')) }),
    }) as CheckpointStore;
    const ck20 = writeCheckpoint({ root: t.work, step: 20, run: RUN });
    const err = await pushCheckpoint({ store: lossy, step: 20, dir: ck20.dir, run: RUN }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(VerifyError);
    expect((err as VerifyError).problems.join('\n')).toContain('optimizer.safetensors is missing');
    const pointer = await readJson<Pointer>(t.store, 'latest.json');
    expect(pointer.step).toBe(10);
    expect(existsSync(ck10.dir)).toBe(true); // nothing pruned locally either
    // The next honest push repairs it.
    const ok = await pushCheckpoint({ store: t.store, step: 20, dir: ck20.dir, run: RUN });
    expect(ok.commits).toBe(2);
    expect((await readJson<Pointer>(t.store, 'latest.json')).step).toBe(20);
  });

  it('names the bad field for invalid options', async () => {
    const t = await makeTestStore(kind);
    const ck = writeCheckpoint({ root: t.work, step: 1, run: RUN });
    const field = async (p: Promise<unknown>): Promise<string> => {
      const e = await p.catch((x: unknown) => x);
      expect(e).toBeInstanceOf(InvalidCheckpointOptionError);
      return (e as InvalidCheckpointOptionError).field;
    };
    expect(await field(pushCheckpoint({ store: t.store, step: -1, dir: ck.dir, run: RUN }))).toBe('step');
    expect(await field(pushCheckpoint({ store: t.store, step: 1.5, dir: ck.dir, run: RUN }))).toBe('step');
    expect(await field(pushCheckpoint({ store: t.store, step: 1, dir: ck.dir, run: '' }))).toBe('run');
    expect(await field(pushCheckpoint({ store: t.store, step: 1, dir: ck.dir, run: RUN, keepRemote: 0 }))).toBe(
      'keepRemote',
    );
    expect(await field(pushCheckpoint({ store: t.store, step: 1, dir: ck.dir, run: RUN, keepLocal: -1 }))).toBe(
      'keepLocal',
    );
    expect(await field(pushCheckpoint({ store: t.store, step: 1, dir: join(t.work, 'nope'), run: RUN }))).toBe('dir');
    expect(t.commits()).toBe(0);
  });
});

describe('local prune and the store a push verified to', () => {
  it('keeps folders whose push verified only to another store, and those of an older record naming none', async () => {
    const a = await makeTestStore('dir');
    const b = await makeTestStore('dir');
    const out = join(a.work, 'output');
    for (const step of [50, 75, 100]) {
      const ck = writeCheckpoint({ root: out, step, run: RUN });
      await pushCheckpoint({ store: a.store, step, dir: ck.dir, run: RUN, keepLocal: Infinity });
    }
    const ck125 = writeCheckpoint({ root: out, step: 125, run: RUN });
    const toB = await pushCheckpoint({ store: b.store, step: 125, dir: ck125.dir, run: RUN, keepLocal: 1 });
    expect(toB.prunedLocal).toEqual([]);
    expect(readdirSync(out).sort()).toEqual([
      '.soup-verified.json',
      'checkpoint-100',
      'checkpoint-125',
      'checkpoint-50',
      'checkpoint-75',
    ]);
    // An older record ({"<step>": "<sha>"}) names no store: unknown, so its folder stays.
    const ledgerPath = join(out, '.soup-verified.json');
    const ledger = JSON.parse(readFileSync(ledgerPath, 'utf8')) as Record<string, unknown>;
    writeFileSync(ledgerPath, JSON.stringify({ ...ledger, 50: 'aa', 75: 'bb', 100: 'cc' }));
    const ck150 = writeCheckpoint({ root: out, step: 150, run: RUN });
    const again = await pushCheckpoint({ store: a.store, step: 150, dir: ck150.dir, run: RUN, keepLocal: 1 });
    expect(again.prunedLocal).toEqual([]);
    // Pushed to a store that verified them: those go.
    const last = await pushCheckpoint({ store: b.store, step: 150, dir: ck150.dir, run: RUN, keepLocal: 1 });
    expect(last.prunedLocal.map((d) => d.split('/').pop())).toEqual(['checkpoint-125']);
  });
});
