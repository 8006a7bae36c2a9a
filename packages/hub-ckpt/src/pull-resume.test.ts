import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sha256, writeCheckpoint } from '../bench/_fixtures';
import { CorruptCheckpointError, StaleRunError } from './errors';
import { pullResume } from './pull-resume';
import { pushCheckpoint } from './push-checkpoint';
import { pushFinal } from './push-final';
import { makeTestStore, STORE_KINDS, type TestStore } from './_test-helpers';

const RUN = 'run-pr';

async function pushSteps(t: TestStore, steps: number[], run = RUN): Promise<Record<number, Record<string, string>>> {
  const hashes: Record<number, Record<string, string>> = {};
  for (const step of steps) {
    const ck = writeCheckpoint({ root: join(t.work, 'out'), step, run });
    await pushCheckpoint({ store: t.store, step, dir: ck.dir, run, keepLocal: Infinity });
    hashes[step] = ck.hashes;
  }
  return hashes;
}

/** Corrupts one stored file at rest: a directory store's file on disk, or (Hub) every serve of it. */
function corruptAtRest(t: TestStore, path: string): void {
  if (t.kind === 'dir') {
    const file = join(t.location, ...path.split('/'));
    const bytes = readFileSync(file);
    bytes[100] = (bytes[100] ?? 0) ^ 0xff;
    writeFileSync(file, bytes);
  } else t.server?.corruptAtRest(t.location, path);
}

function latestBytes(t: TestStore): Promise<Uint8Array | null> {
  return t.reopen().readFile({ path: 'latest.json' });
}

describe.each(STORE_KINDS)('pullResume on %s store', (kind) => {
  it('fresh when the repo is missing or empty; complete on a terminal pointer', async () => {
    const t = await makeTestStore(kind);
    const dir = join(t.work, 'resume');
    expect(await pullResume({ store: t.store, run: RUN, dir })).toEqual({ outcome: 'fresh', reason: 'repo-missing' });
    await t.store.create();
    expect(await pullResume({ store: t.store, run: RUN, dir })).toEqual({ outcome: 'fresh', reason: 'no-checkpoint' });
    const fin = writeCheckpoint({ root: join(t.work, 'fin'), step: 30, run: RUN });
    await pushFinal({ store: t.store, step: 30, dir: fin.dir, run: RUN });
    expect(await pullResume({ store: t.store, run: RUN, dir })).toMatchObject({
      outcome: 'complete',
      step: 30,
      pathInRepo: 'final',
    });
    expect(existsSync(dir)).toBe(false);
  });

  it('a run extended past its terminal pointer resumes its newest checkpoint at or below it, reopened', async () => {
    const t = await makeTestStore(kind);
    const hashes = await pushSteps(t, [10, 20]);
    const fin = writeCheckpoint({ root: join(t.work, 'fin'), step: 20, run: RUN });
    await pushFinal({ store: t.store, step: 20, dir: fin.dir, run: RUN });
    const dir = join(t.work, 'resume');
    // Not extended past it: still complete.
    expect(await pullResume({ store: t.store, run: RUN, dir, reopenBelow: 20 })).toMatchObject({ outcome: 'complete' });
    const r = await pullResume({ store: t.store, run: RUN, dir, reopenBelow: 30, repair: true });
    expect(r).toMatchObject({ outcome: 'resume', step: 20, via: 'reopened', previousStep: 20, repaired: true });
    expect(sha256(readFileSync(join(dir, 'checkpoint-20', 'model.safetensors')))).toBe(
      hashes[20]!['model.safetensors'],
    );
    const pointer = JSON.parse(new TextDecoder().decode((await latestBytes(t))!)) as Record<string, unknown>;
    expect(pointer).toMatchObject({ step: 20, path_in_repo: 'ckpt/checkpoint-20', terminal: false });
  });

  it(
    'pulls the pointed checkpoint into <dir>/checkpoint-<step>, every hash checked, latest.json ' + 'untouched',
    async () => {
      const t = await makeTestStore(kind);
      const hashes = await pushSteps(t, [10, 20]);
      const before = await latestBytes(t);
      const dir = join(t.work, 'resume');
      const r = await pullResume({ store: t.reopen(), run: RUN, dir });
      expect(r).toMatchObject({
        outcome: 'resume',
        step: 20,
        pathInRepo: 'ckpt/checkpoint-20',
        via: null,
        previousStep: null,
        repaired: false,
        skipped: [],
      });
      if (r.outcome !== 'resume') throw new Error('unreachable');
      expect(r.localDir).toBe(join(dir, 'checkpoint-20'));
      for (const [name, want] of Object.entries(hashes[20] ?? {}))
        expect(sha256(readFileSync(join(r.localDir, name)))).toBe(want);
      expect(readdirSync(dir)).toEqual(['checkpoint-20']);
      expect(Buffer.from((await latestBytes(t)) ?? [])).toEqual(Buffer.from(before ?? []));
    },
  );

  it(
    'corruption at rest in the pointed checkpoint: falls back to the next older one that pulls ' +
      'cleanly, naming what it skipped',
    async () => {
      const t = await makeTestStore(kind);
      const hashes = await pushSteps(t, [10, 20, 30]);
      corruptAtRest(t, 'ckpt/checkpoint-30/model.safetensors');
      corruptAtRest(t, 'ckpt/checkpoint-20/optimizer.safetensors');
      const before = await latestBytes(t);
      const dir = join(t.work, 'resume');
      const r = await pullResume({ store: t.reopen(), run: RUN, dir });
      expect(r).toMatchObject({ outcome: 'resume', step: 10, via: 'fallback', previousStep: 30, repaired: false });
      if (r.outcome !== 'resume') throw new Error('unreachable');
      expect(r.skipped.map((s) => s.step)).toEqual([30, 20]);
      expect(r.skipped[0]?.problems.join(' ')).toMatch(/model\.safetensors/);
      expect(r.skipped[1]?.problems.join(' ')).toMatch(/optimizer\.safetensors/);
      for (const [name, want] of Object.entries(hashes[10] ?? {}))
        expect(sha256(readFileSync(join(r.localDir, name)))).toBe(want);
      // No half-pulled folder of the skipped checkpoints remains.
      expect(readdirSync(dir)).toEqual(['checkpoint-10']);
      expect(Buffer.from((await latestBytes(t)) ?? [])).toEqual(Buffer.from(before ?? []));
    },
  );

  it(
    'without fallback a corrupt pointed checkpoint is refused; with repair the pointer follows the ' + 'fallback',
    async () => {
      const t = await makeTestStore(kind);
      await pushSteps(t, [10, 20]);
      corruptAtRest(t, 'ckpt/checkpoint-20/model.safetensors');
      const dir = join(t.work, 'resume');
      const err = await pullResume({ store: t.reopen(), run: RUN, dir, fallback: false }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CorruptCheckpointError);
      expect((err as Error).message).toMatch(/checkpoint-20.*model\.safetensors/s);
      expect((err as Error).message).toMatch(/resume with fallback/);
      expect(existsSync(join(dir, 'checkpoint-20'))).toBe(false);
      expect(existsSync(join(dir, 'checkpoint-20.incomplete'))).toBe(false);

      const r = await pullResume({ store: t.reopen(), run: RUN, dir, repair: true });
      expect(r).toMatchObject({ outcome: 'resume', step: 10, via: 'fallback', previousStep: 20, repaired: true });
      const now = JSON.parse(Buffer.from((await latestBytes(t)) ?? []).toString('utf8')) as { step: number };
      expect(now.step).toBe(10);
    },
  );

  it('nothing pulls cleanly: CorruptCheckpointError lists every skipped checkpoint and why', async () => {
    const t = await makeTestStore(kind);
    await pushSteps(t, [10, 20]);
    corruptAtRest(t, 'ckpt/checkpoint-20/model.safetensors');
    corruptAtRest(t, 'ckpt/checkpoint-10/model.safetensors');
    const err = await pullResume({ store: t.reopen(), run: RUN, dir: join(t.work, 'resume') }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CorruptCheckpointError);
    expect((err as Error).message).toMatch(/ckpt\/checkpoint-20: .*\| ckpt\/checkpoint-10: /);
    expect((err as CorruptCheckpointError).problems.some((p) => p.startsWith('ckpt/checkpoint-10: '))).toBe(true);
    const dir = join(t.work, 'resume');
    expect(existsSync(dir) ? readdirSync(dir) : []).toEqual([]);
  });

  it("another run's pointer -> StaleRunError; an existing local folder is refused unless overwrite", async () => {
    const t = await makeTestStore(kind);
    await pushSteps(t, [10]);
    await expect(pullResume({ store: t.reopen(), run: 'other-run', dir: join(t.work, 'r') })).rejects.toBeInstanceOf(
      StaleRunError,
    );
    const dir = join(t.work, 'r');
    await pullResume({ store: t.reopen(), run: RUN, dir });
    await expect(pullResume({ store: t.reopen(), run: RUN, dir })).rejects.toThrow(/already exists/);
    expect(await pullResume({ store: t.reopen(), run: RUN, dir, overwrite: true })).toMatchObject({
      outcome: 'resume',
      step: 10,
    });
  });

  it('an aborted signal stops the pull between files and leaves no half-pulled folder', async () => {
    const t = await makeTestStore(kind);
    await pushSteps(t, [10]);
    const dir = join(t.work, 'resume');
    const ac = new AbortController();
    const err = await pullResume({
      store: t.reopen(),
      run: RUN,
      dir,
      signal: ac.signal,
      onFile: () => ac.abort(new Error('session ending')),
    }).catch((e: unknown) => e);
    expect((err as Error).message).toBe('session ending');
    expect(existsSync(dir) ? readdirSync(dir) : []).toEqual([]);
  });
});
