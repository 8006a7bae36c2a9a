import { useTempDir } from '@soup/test-utils';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { saveCacheEntry } from '@soup/batch-probe';
import { lookupTuneEntry, makeTuneKey, resolveTuneCachePath, saveTuneEntry, type TuneEntry } from './tune-cache';

const entry = (chosen: number): TuneEntry => ({
  chosen,
  reason: 'r',
  rows: [
    {
      label: 'x=1',
      values: { x: '1' },
      microBatchSize: 4,
      accumulation: 8,
      peakBytes: 1,
      stepMs: 100,
      noiseMs: 1,
      samplesPerSecond: 40,
      note: null,
    },
    {
      label: 'x=2',
      values: { x: '2' },
      microBatchSize: 8,
      accumulation: 4,
      peakBytes: 1,
      stepMs: 228,
      noiseMs: 1,
      samplesPerSecond: 35,
      note: null,
    },
  ],
  globalBatchSize: 32,
  worldSize: 1,
  timeSteps: 8,
  budgetBytes: null,
  gpuName: 'cpu',
  gpuMemoryGb: 24,
  command: 'c {x}',
  savedAt: new Date().toISOString(),
});

describe('tune cache', () => {
  it(
    "lives beside the batch cache, keeps both writers' entries, and leaves the batch cache as the " +
      'Python CLI reads it',
    async () => {
      const home = useTempDir();
      const location = { env: {}, homeDir: home, cwd: home };
      expect(resolveTuneCachePath(location)).toBe(join(home, '.soup', 'tune_cache.json'));
      const k1 = makeTuneKey({
        command: 'c {x}',
        tries: { x: ['1', '2'] },
        globalBatchSize: 32,
        worldSize: 1,
        budgetBytes: null,
        gpuName: 'cpu',
        gpuMemoryGb: 24,
      });
      const k2 = makeTuneKey({
        command: 'c {x}',
        tries: { x: ['1', '2'] },
        globalBatchSize: 64,
        worldSize: 1,
        budgetBytes: null,
        gpuName: 'cpu',
        gpuMemoryGb: 24,
      });
      expect(k1).not.toBe(k2);
      await saveCacheEntry({ ...location, key: 'k', batchSize: 4 });
      await Promise.all([saveTuneEntry(k1, entry(0), location), saveTuneEntry(k2, entry(1), location)]);
      expect(lookupTuneEntry(k1, location)?.chosen).toBe(0);
      expect(lookupTuneEntry(k2, location)?.chosen).toBe(1);
      expect(JSON.parse(readFileSync(join(home, '.soup', 'batch_cache.json'), 'utf8'))).toEqual({ k: 4 });
    },
  );

  it('reads a corrupt file, another version, or an entry missing its fields as no entry', async () => {
    const home = useTempDir();
    const location = { env: {}, homeDir: home, cwd: home };
    const path = resolveTuneCachePath(location);
    await saveTuneEntry('k', entry(0), location);
    expect(lookupTuneEntry('k', location)?.chosen).toBe(0);
    for (const text of [
      '{',
      JSON.stringify({ version: 2, entries: { k: entry(0) } }),
      JSON.stringify({ version: 1, entries: { k: { ...entry(0), chosen: 5 } } }),
    ]) {
      writeFileSync(path, text);
      expect(lookupTuneEntry('k', location)).toBeUndefined();
    }
  });
});
