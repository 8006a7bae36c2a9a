import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { seededBytes, writeCheckpoint } from '../bench/_fixtures';
import { CorruptCheckpointError, StaleRunError } from './errors';
import { pushCheckpoint } from './push-checkpoint';
import { pushFinal } from './push-final';
import { resolveResume } from './resolve-resume';
import { makeTestStore, STORE_KINDS, type TestStore } from './_test-helpers';
import type { CheckpointStore, Pointer } from './types';
import { verifyCheckpoint } from './verify-checkpoint';

const RUN = 'run-r';

async function pushSteps(t: TestStore, steps: number[], run = RUN): Promise<void> {
  for (const step of steps) {
    const ck = writeCheckpoint({ root: join(t.work, 'out'), step, run });
    await pushCheckpoint({ store: t.store, step, dir: ck.dir, run, keepLocal: Infinity });
  }
}

async function pointerOf(store: CheckpointStore): Promise<Pointer | null> {
  const raw = await store.readFile({ path: 'latest.json' });
  return raw === null ? null : (JSON.parse(new TextDecoder().decode(raw)) as Pointer);
}

/** Uploads a checkpoint folder and verifies it, then stops before the pointer (a crash between verify and pointer). */
async function pushButCrashBeforePointer(t: TestStore, step: number): Promise<void> {
  const ck = writeCheckpoint({ root: join(t.work, 'out'), step, run: RUN });
  const crash = new Error('simulated crash after verify');
  const err = await pushCheckpoint({
    store: t.store,
    step,
    dir: ck.dir,
    run: RUN,
    onPhase: (e) => {
      if (e.phase === 'verified') throw crash;
    },
  }).catch((e: unknown) => e);
  expect(err).toBe(crash);
}

describe.each(STORE_KINDS)('resolveResume on %s store', (kind) => {
  it('repo missing -> fresh, and creates nothing (the first push creates it)', async () => {
    const t = await makeTestStore(kind);
    expect(await resolveResume({ store: t.store, run: RUN })).toEqual({ outcome: 'fresh', reason: 'repo-missing' });
    expect(await t.store.exists()).toBe(false);
    await pushSteps(t, [5]);
    expect(await t.store.exists()).toBe(true);
  });

  it('empty repo -> fresh (no-checkpoint)', async () => {
    const t = await makeTestStore(kind);
    await t.store.create();
    expect(await resolveResume({ store: t.store, run: RUN })).toEqual({ outcome: 'fresh', reason: 'no-checkpoint' });
  });

  it('pointer of another run -> StaleRunError naming both fingerprints', async () => {
    const t = await makeTestStore(kind);
    await pushSteps(t, [10], 'old-run-fp');
    const err = await resolveResume({ store: t.reopen(), run: 'new-run-fp' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StaleRunError);
    const e = err as StaleRunError;
    expect(e.pointerRun).toBe('old-run-fp');
    expect(e.run).toBe('new-run-fp');
    expect(e.message).toMatch(/old-run-fp[\s\S]*new-run-fp/);
    expect(e.pointerStep).toBe(10);
  });

  it('terminal pointer of the same run -> complete; of another run -> StaleRunError', async () => {
    const t = await makeTestStore(kind);
    await pushSteps(t, [10]);
    const fin = writeCheckpoint({ root: join(t.work, 'final-src'), step: 20, run: RUN });
    await pushFinal({ store: t.store, step: 20, dir: fin.dir, run: RUN });
    const out = await resolveResume({ store: t.reopen(), run: RUN });
    expect(out).toMatchObject({ outcome: 'complete', step: 20, pathInRepo: 'final' });
    await expect(resolveResume({ store: t.reopen(), run: 'someone-else' })).rejects.toBeInstanceOf(StaleRunError);
  });

  it(
    'pointed checkpoint missing a file -> CorruptCheckpointError; fallback walks back and repairs the ' + 'pointer',
    async () => {
      const t = await makeTestStore(kind);
      await pushSteps(t, [10, 20]);
      await t.store.commit({
        message: 'lose a file',
        operations: [{ kind: 'delete', path: 'ckpt/checkpoint-20/optimizer.safetensors' }],
      });
      const err = await resolveResume({ store: t.reopen(), run: RUN }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CorruptCheckpointError);
      expect((err as CorruptCheckpointError).pathInRepo).toBe('ckpt/checkpoint-20');
      expect((err as CorruptCheckpointError).problems).toContain('ckpt/checkpoint-20/optimizer.safetensors is missing');
      expect((await pointerOf(t.store))?.step).toBe(20); // a refusal changes nothing

      const out = await resolveResume({ store: t.reopen(), run: RUN, fallback: true });
      expect(out).toMatchObject({ outcome: 'resume', step: 10, via: 'fallback', previousStep: 20, repaired: true });
      const p = await pointerOf(t.store);
      expect(p).toMatchObject({ step: 10, path_in_repo: 'ckpt/checkpoint-10', run: RUN, terminal: false });
      const v = await verifyCheckpoint({
        store: t.store,
        pathInRepo: 'ckpt/checkpoint-10',
        expectedManifestSha256: p?.manifest_sha256,
      });
      expect(v.ok).toBe(true);
    },
  );

  it(
    'pointed file whose bytes do not match the manifest -> CorruptCheckpointError; no fallback target ' +
      '-> still refused',
    async () => {
      const t = await makeTestStore(kind);
      await pushSteps(t, [10]);
      // Same size, other bytes: only a hash check can tell.
      await t.store.commit({
        message: 'overwrite',
        operations: [
          { kind: 'put', path: 'ckpt/checkpoint-10/model.safetensors', bytes: seededBytes('tampered', 48_000) },
        ],
      });
      const err = await resolveResume({ store: t.reopen(), run: RUN }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CorruptCheckpointError);
      expect((err as CorruptCheckpointError).problems.join('\n')).toMatch(/model\.safetensors.*sha256/);
      await expect(resolveResume({ store: t.reopen(), run: RUN, fallback: true })).rejects.toBeInstanceOf(
        CorruptCheckpointError,
      );
    },
  );

  it('invalid latest.json -> CorruptCheckpointError on latest.json; fallback resumes the newest verified', async () => {
    const t = await makeTestStore(kind);
    await pushSteps(t, [10, 20]);
    await t.store.commit({
      message: 'garble',
      operations: [{ kind: 'put', path: 'latest.json', bytes: new TextEncoder().encode('{"step": "twenty"') }],
    });
    const err = await resolveResume({ store: t.reopen(), run: RUN }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CorruptCheckpointError);
    expect((err as CorruptCheckpointError).pathInRepo).toBe('latest.json');
    const out = await resolveResume({ store: t.reopen(), run: RUN, fallback: true });
    expect(out).toMatchObject({ outcome: 'resume', step: 20, via: 'fallback', repaired: true });
    expect((await pointerOf(t.store))?.step).toBe(20);
  });

  it(
    'a verified checkpoint newer than the pointer (crash between verify and pointer) -> resume from ' + 'it and repair',
    async () => {
      const t = await makeTestStore(kind);
      await pushSteps(t, [10]);
      await pushButCrashBeforePointer(t, 20);
      expect((await pointerOf(t.store))?.step).toBe(10);

      const dry = await resolveResume({ store: t.reopen(), run: RUN, repair: false });
      expect(dry).toMatchObject({
        outcome: 'resume',
        step: 20,
        via: 'newer-verified',
        previousStep: 10,
        repaired: false,
      });
      expect((await pointerOf(t.store))?.step).toBe(10);

      const out = await resolveResume({ store: t.reopen(), run: RUN });
      expect(out).toMatchObject({
        outcome: 'resume',
        step: 20,
        pathInRepo: 'ckpt/checkpoint-20',
        via: 'newer-verified',
        repaired: true,
      });
      const p = await pointerOf(t.store);
      expect(p).toMatchObject({ step: 20, path_in_repo: 'ckpt/checkpoint-20', run: RUN });
      expect(out.outcome === 'resume' && p?.manifest_sha256 === out.manifestSha256).toBe(true);
    },
  );

  it('ignores newer folders that do not verify or belong to another run', async () => {
    const t = await makeTestStore(kind);
    await pushSteps(t, [10]);
    const partial = writeCheckpoint({ root: join(t.work, 'p'), step: 30, run: RUN });
    await t.store.commit({
      message: 'partial upload',
      operations: [
        {
          kind: 'put',
          path: 'ckpt/checkpoint-30/model.safetensors',
          localPath: join(partial.dir, 'model.safetensors'),
        },
      ],
    });
    // A complete, verified folder but from another run (same repo misused): not ours to resume.
    const foreign = writeCheckpoint({ root: join(t.work, 'f'), step: 40, run: 'foreign' });
    const lone = await makeTestStore(kind);
    await pushCheckpoint({ store: lone.store, step: 40, dir: foreign.dir, run: 'foreign' });
    const ops = [];
    for (const e of await lone.store.list({ prefix: 'ckpt/checkpoint-40' })) {
      ops.push({
        kind: 'put' as const,
        path: e.path,
        bytes: (await lone.store.readFile({ path: e.path })) ?? new Uint8Array(),
      });
    }
    await t.store.commit({ message: 'foreign folder', operations: ops });
    const out = await resolveResume({ store: t.reopen(), run: RUN });
    expect(out).toMatchObject({ outcome: 'resume', step: 10, via: null, repaired: false });
  });

  it(
    'verified checkpoints but no latest.json -> resume from the newest (no-pointer) and write the ' + 'pointer',
    async () => {
      const t = await makeTestStore(kind);
      await t.store.create();
      await pushButCrashBeforePointer(t, 10);
      expect(await pointerOf(t.store)).toBeNull();
      const out = await resolveResume({ store: t.reopen(), run: RUN });
      expect(out).toMatchObject({ outcome: 'resume', step: 10, via: 'no-pointer', repaired: true });
      expect((await pointerOf(t.store))?.step).toBe(10);
    },
  );

  it('otherwise -> resume from the pointed checkpoint', async () => {
    const t = await makeTestStore(kind);
    await pushSteps(t, [10, 20, 30]);
    const before = t.commits();
    const out = await resolveResume({ store: t.reopen(), run: RUN });
    expect(out).toMatchObject({
      outcome: 'resume',
      step: 30,
      pathInRepo: 'ckpt/checkpoint-30',
      via: null,
      repaired: false,
    });
    if (out.outcome === 'resume')
      expect(Object.keys(out.manifest.files).sort()).toEqual([
        'extra/rng_state.json',
        'model.safetensors',
        'optimizer.safetensors',
        'trainer_state.json',
      ]);
    expect(t.commits()).toBe(before);
  });
});
