// One batch-cache key for a trainer command: soup probe --exec, soup run --probe and --try file an
// answer under the same key (the trial command and the hashes of the files it names), so each
// command finds what the others measured.
import { makeCacheKey, saveCacheEntry } from '@soup/batch-probe';
import { useTempDir } from '@soup/test-utils';
import type { TuneEntry } from '@soup/tune';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveTrainerBatch } from './trainer-batch';
import { trainerProbe, trialCommand, type TrainerProbeOptions } from './trainer-probe';
import { tuneTrainerBatch } from './trainer-tune';
import { cpuTrainerOptions } from './_test-trainer';

function setup(): { dir: string; trainer: TrainerProbeOptions } {
  const dir = useTempDir();
  // Any trial fails: an answer can only come from the cache.
  writeFileSync(join(dir, 'train.mjs'), 'process.exit(1);\n');
  return { dir, trainer: cpuTrainerOptions(dir) };
}

const search = { refresh: false, noCache: false, cacheExceptionsOnly: false, predict: true };
const micro = { globalBatchSize: 8, worldSize: 1, headroom: 0 };

describe('one batch-cache key for a trainer command (issue 47)', () => {
  it('soup run --probe finds the micro-batch soup probe --exec cached for the same trainer', async () => {
    const { dir, trainer } = setup();
    const typed = `${process.execPath} train.mjs --bs {micro_batch_size} --accum {grad_accum}`;
    // soup probe --exec --global-batch-size: its trial command's probe, filed under its key.
    const probed = trainerProbe(trialCommand(typed), trainer);
    expect(probed.base).toMatch(/^exec:.* files:(.*,)?train\.mjs@[0-9a-f]{12}$/);
    await saveCacheEntry({ key: makeCacheKey(probed.key), batchSize: 4, env: trainer.env, cwd: dir });

    const run = await resolveTrainerBatch({ ...trainer, ...search, command: typed, micro });
    expect(run.probed).toMatchObject({ batchSize: 4, source: 'cache', cacheKey: makeCacheKey(probed.key) });
    expect(run.probed.key).toEqual(probed.key);
    expect(run.resolution.trials).toEqual([]);
  });

  it('without a global batch too; an edited trainer file is another key', async () => {
    const { dir, trainer } = setup();
    const typed = `${process.execPath} train.mjs --bs {batch_size}`;
    const probed = trainerProbe(typed, trainer);
    await saveCacheEntry({ key: makeCacheKey(probed.key), batchSize: 6, env: trainer.env, cwd: dir });
    const run = await resolveTrainerBatch({ ...trainer, ...search, command: typed });
    expect(run.probed).toMatchObject({ batchSize: 6, source: 'cache', cacheKey: makeCacheKey(probed.key) });

    writeFileSync(join(dir, 'train.mjs'), 'process.exit(2);\n');
    expect(makeCacheKey(trainerProbe(typed, trainer).key)).not.toBe(makeCacheKey(probed.key));
  });

  it("soup run --try files the chosen candidate under the key of its fit, as soup probe --exec's trial", async () => {
    const { trainer } = setup();
    const typed = `${process.execPath} train.mjs --bs {micro_batch_size} --ckpt {ckpt} --steps {probe_steps}`;
    const entry = {
      chosen: 1,
      rows: [
        { values: { ckpt: 'true' }, microBatchSize: 8 },
        { values: { ckpt: 'false' }, microBatchSize: 2 },
      ],
    } as unknown as TuneEntry;
    const chosen = await tuneTrainerBatch({
      ...trainer,
      ...search,
      command: typed,
      tries: { ckpt: ['true', 'false'] },
      micro,
      timeSteps: 8,
      start: undefined,
      tune: async () => ({ entry, source: 'measured' }),
    });
    const trial = `${process.execPath} train.mjs --bs {batch_size} --ckpt false --steps 1`;
    expect(chosen).toMatchObject({ batchSize: 2, source: 'tune', levers: { ckpt: 'false' } });
    expect(chosen.key).toEqual(trainerProbe(trial, trainer).key);
    expect(chosen.cacheKey).toBe(makeCacheKey(trainerProbe(trial, trainer).key));
  });
});
