import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { useTempDir } from '@soup/test-utils';
import { describe, expect, test } from 'vitest';
import { clearCache } from './clear-cache';
import { listCacheEntries } from './list-cache-entries';
import { lookupCacheEntry } from './lookup-cache-entry';
import { pickBatchSize } from './pick-batch-size';
import { saveCacheEntry } from './save-cache-entry';
import type { ProbeFn } from './types';

const MiB = 2 ** 20;

function sandbox() {
  const root = useTempDir('soup-bp-lookup-');
  const path = join(root, 'cache', 'batch_cache.json');
  return {
    root,
    path,
    meta: join(root, 'cache', 'batch_cache.meta.json'),
    homeDir: root,
    cwd: root,
    tmpDir: root,
    env: { SOUP_BATCH_CACHE_PATH: path },
  };
}

const fields = {
  base: 'exec:python train.py',
  maxLength: 512,
  quantization: 'none',
  loraR: 0,
  gpuName: 'cpu',
  gpuMemoryGb: 23,
};

/** 1 MiB per sample over a 4 MiB base, measured: a size fits while 4 + b MiB <= budget. */
function mibProbe(budgetBytes: number, measurement = 'sampled-rss'): ProbeFn & { calls: number[] } {
  const calls: number[] = [];
  const probe: ProbeFn = async (b) => {
    calls.push(b);
    const peakBytes = (4 + b) * MiB;
    return { fits: peakBytes <= budgetBytes, peakBytes, budgetBytes, measurement };
  };
  return Object.assign(probe, { calls });
}

describe('cache lookups under a budget and a ceiling', () => {
  test(
    '--budget 10MiB does not take a 16 found under 20 MiB; it probes 6 and keeps both provenances ' + 'right',
    async () => {
      const s = sandbox();
      const loose = await pickBatchSize({
        ...fields,
        ...s,
        staticEstimate: 8,
        ceiling: 32,
        strategy: 'probe',
        probe: mibProbe(20 * MiB),
        budgetBytes: 20 * MiB,
      });
      expect(loose).toMatchObject({ batchSize: 16, source: 'probe', saved: true, bound: 'exact' });
      const strict = mibProbe(10 * MiB);
      const r = await pickBatchSize({
        ...fields,
        ...s,
        staticEstimate: 8,
        ceiling: 32,
        strategy: 'probe',
        probe: strict,
        budgetBytes: 10 * MiB,
      });
      expect(r).toMatchObject({ batchSize: 6, source: 'probe' });
      expect(r.skippedCache).toMatch(/budget of 20971520 bytes, looser than 10485760/);
      expect(strict.calls.length).toBeGreaterThan(0);
      // The same budget again, or a looser one: the cache answers 6 without probing.
      const never: ProbeFn = async () => {
        throw new Error('must not probe');
      };
      expect(
        await pickBatchSize({
          ...fields,
          ...s,
          staticEstimate: 8,
          ceiling: 32,
          strategy: 'probe',
          probe: never,
          budgetBytes: 10 * MiB,
        }),
      ).toMatchObject({ batchSize: 6, source: 'cache' });
      // The main file stays key -> int, as the Python original reads it.
      expect(Object.values(JSON.parse(readFileSync(s.path, 'utf8')) as Record<string, unknown>)).toEqual([6]);
      const [entry] = await listCacheEntries(s);
      expect(entry!.provenance).toMatchObject({
        batchSize: 6,
        budgetBytes: 10 * MiB,
        ceiling: 32,
        bound: 'exact',
        measurement: 'sampled-rss',
        base: fields.base,
        maxLength: 512,
        gpuName: 'cpu',
      });
      // A looser budget does not silently reuse the stricter answer: it probes again, starting at the cached 6.
      const looser = mibProbe(12 * MiB);
      const l = await pickBatchSize({
        ...fields,
        ...s,
        staticEstimate: 8,
        ceiling: 32,
        strategy: 'probe',
        probe: looser,
        budgetBytes: 12 * MiB,
      });
      expect(l).toMatchObject({ batchSize: 8, source: 'probe', bound: 'exact' });
      expect(l.skippedCache).toMatch(/stricter budget of 10485760 bytes than 12582912 bytes: probing again from 6/);
      expect(looser.calls[0]).toBe(6);
    },
  );

  test('an answer capped by its ceiling is not used under a higher ceiling; an exact one is', async () => {
    const s = sandbox();
    const capped = await pickBatchSize({
      ...fields,
      ...s,
      staticEstimate: 4,
      ceiling: 8,
      strategy: 'probe',
      probe: mibProbe(100 * MiB),
      budgetBytes: 100 * MiB,
    });
    expect(capped).toMatchObject({ batchSize: 8, bound: 'capped' });
    expect(await lookupCacheEntry({ ...s, key: capped.cacheKey!, ceiling: 8, budgetBytes: 100 * MiB })).toMatchObject({
      hit: true,
      batchSize: 8,
    });
    const higher = await lookupCacheEntry({ ...s, key: capped.cacheKey!, ceiling: 64, budgetBytes: 100 * MiB });
    expect(higher).toMatchObject({
      hit: false,
      skipped: expect.stringMatching(/capped by the ceiling 8; this search goes up to 64/),
    });
    const again = await pickBatchSize({
      ...fields,
      ...s,
      staticEstimate: 4,
      ceiling: 64,
      strategy: 'probe',
      probe: mibProbe(100 * MiB),
      budgetBytes: 100 * MiB,
    });
    expect(again).toMatchObject({ batchSize: 64, source: 'probe' });
    const exact = await pickBatchSize({
      ...fields,
      ...s,
      staticEstimate: 4,
      ceiling: 256,
      strategy: 'probe',
      probe: mibProbe(100 * MiB),
      budgetBytes: 100 * MiB,
      refresh: true,
    });
    expect(exact).toMatchObject({ batchSize: 96, bound: 'exact', source: 'probe' });
    expect(await lookupCacheEntry({ ...s, key: exact.cacheKey!, ceiling: 1024, budgetBytes: 100 * MiB })).toMatchObject(
      { hit: true, batchSize: 96 },
    );
    // Under a lower ceiling the exact 96 says 64 fits: the ceiling, from the cache.
    expect(await lookupCacheEntry({ ...s, key: exact.cacheKey!, ceiling: 64, budgetBytes: 100 * MiB })).toMatchObject({
      hit: true,
      batchSize: 64,
      cappedFrom: 96,
    });
  });

  test('a --ceiling 16 run after an exact 30: 16 from the cache, no trial, and the exact answer stays', async () => {
    const s = sandbox();
    const exact = await pickBatchSize({
      ...fields,
      ...s,
      staticEstimate: 8,
      ceiling: 64,
      strategy: 'probe',
      probe: mibProbe(34 * MiB),
      budgetBytes: 34 * MiB,
    });
    expect(exact).toMatchObject({ batchSize: 30, bound: 'exact', saved: true });
    const capped = await pickBatchSize({
      ...fields,
      ...s,
      staticEstimate: 8,
      ceiling: 16,
      strategy: 'probe',
      probe: mibProbe(34 * MiB),
      budgetBytes: 34 * MiB,
    });
    // 30 fits, so 16 does: the ceiling comes from the cache without a trial, and the exact 30 stays.
    expect(capped).toMatchObject({ batchSize: 16, source: 'cache', cappedFrom: 30, trials: [] });
    expect(Object.values(JSON.parse(readFileSync(s.path, 'utf8')) as Record<string, unknown>)).toEqual([30]);
  });

  test('a fit the probe warned about (OOM text on exit 0) is saved only as capped at itself', async () => {
    const s = sandbox();
    const probe: ProbeFn = async (b) => {
      const peakBytes = (4 + b) * MiB;
      return {
        fits: peakBytes <= 20 * MiB,
        peakBytes,
        budgetBytes: 20 * MiB,
        measurement: 'sampled-rss',
        ...(b >= 12 ? { warning: 'printed RuntimeError: CUDA out of memory' } : {}),
      };
    };
    const r = await pickBatchSize({
      ...fields,
      ...s,
      staticEstimate: 8,
      ceiling: 32,
      strategy: 'probe',
      probe,
      budgetBytes: 20 * MiB,
    });
    expect(r).toMatchObject({ batchSize: 16, saved: true, provenance: { bound: 'capped', ceiling: 16 } });
    expect(await lookupCacheEntry({ ...s, key: r.cacheKey!, ceiling: 32, budgetBytes: 20 * MiB })).toMatchObject({
      hit: false,
    });
  });

  test('refresh probes again and overwrites', async () => {
    const s = sandbox();
    await pickBatchSize({
      ...fields,
      ...s,
      staticEstimate: 8,
      ceiling: 32,
      strategy: 'probe',
      probe: mibProbe(20 * MiB),
      budgetBytes: 20 * MiB,
    });
    const probe = mibProbe(20 * MiB);
    const r = await pickBatchSize({
      ...fields,
      ...s,
      staticEstimate: 8,
      ceiling: 32,
      strategy: 'probe',
      probe,
      budgetBytes: 20 * MiB,
      refresh: true,
    });
    expect(r).toMatchObject({ source: 'probe', saved: true, batchSize: 16 });
    expect(probe.calls.length).toBeGreaterThan(0);
  });

  test('an exceptions-only answer is returned but saved only when asked', async () => {
    const s = sandbox();
    const exOnly: ProbeFn = async (b) => ({ fits: b <= 5, measurement: 'exceptions-only' });
    const r = await pickBatchSize({
      ...fields,
      ...s,
      staticEstimate: 4,
      ceiling: 16,
      strategy: 'probe',
      probe: exOnly,
    });
    expect(r).toMatchObject({ batchSize: 5, saved: false, notSavedReason: expect.stringMatching(/exceptions only/) });
    expect(await listCacheEntries(s)).toEqual([]);
    const asked = await pickBatchSize({
      ...fields,
      ...s,
      staticEstimate: 4,
      ceiling: 16,
      strategy: 'probe',
      probe: exOnly,
      saveExceptionsOnly: true,
    });
    expect(asked).toMatchObject({ batchSize: 5, saved: true });
    expect((await listCacheEntries(s))[0]!.provenance).toMatchObject({ measurement: 'exceptions-only' });
  });

  test(
    'an entry without provenance (Python wrote it, or the side file is corrupt) serves only a ' +
      'lookup without a budget',
    async () => {
      const s = sandbox();
      await saveCacheEntry({ ...s, key: 'k', batchSize: 12 });
      expect(await lookupCacheEntry({ ...s, key: 'k', ceiling: 64 })).toMatchObject({
        hit: true,
        batchSize: 12,
        provenance: null,
      });
      expect(await lookupCacheEntry({ ...s, key: 'k', ceiling: 64, budgetBytes: 10 * MiB })).toMatchObject({
        hit: false,
        skipped: expect.stringMatching(/no provenance/),
      });
      // 12 fits, so 8 does: the ceiling is the answer, without a trial.
      expect(await lookupCacheEntry({ ...s, key: 'k', ceiling: 8 })).toMatchObject({
        hit: true,
        batchSize: 8,
        cappedFrom: 12,
      });
      // A corrupt side file never breaks the main file.
      await saveCacheEntry({
        ...s,
        key: 'k',
        batchSize: 12,
        provenance: {
          base: 'b',
          maxLength: 1,
          gpuName: 'cpu',
          budgetBytes: 20 * MiB,
          ceiling: 64,
          bound: 'exact',
          measurement: 'peak-rss',
        },
      });
      writeFileSync(s.meta, '{not json');
      expect(await listCacheEntries(s)).toEqual([{ key: 'k', batchSize: 12 }]);
      expect(await lookupCacheEntry({ ...s, key: 'k', ceiling: 64 })).toMatchObject({ hit: true, provenance: null });
      // A stale record (the main file holds another value) is no provenance.
      await saveCacheEntry({
        ...s,
        key: 'k',
        batchSize: 12,
        provenance: {
          base: 'b',
          maxLength: 1,
          gpuName: 'cpu',
          budgetBytes: 20 * MiB,
          ceiling: 64,
          bound: 'exact',
          measurement: 'peak-rss',
        },
      });
      writeFileSync(s.path, '{\n  "k": 30\n}');
      expect(await lookupCacheEntry({ ...s, key: 'k', ceiling: 64, budgetBytes: 20 * MiB })).toMatchObject({
        hit: false,
        skipped: expect.stringMatching(/no provenance/),
      });
    },
  );

  test('clearCache removes the provenance too', async () => {
    const s = sandbox();
    mkdirSync(join(s.root, 'cache'), { recursive: true });
    const prov = {
      base: 'b',
      maxLength: 1,
      gpuName: 'cpu',
      budgetBytes: null,
      ceiling: 64,
      bound: 'exact' as const,
      measurement: 'peak-rss',
    };
    await saveCacheEntry({ ...s, key: 'a', batchSize: 1, provenance: prov });
    await saveCacheEntry({ ...s, key: 'b', batchSize: 2, provenance: prov });
    await clearCache({ ...s, key: 'a' });
    expect(Object.keys((JSON.parse(readFileSync(s.meta, 'utf8')) as { entries: object }).entries)).toEqual(['b']);
    await clearCache(s);
    expect(() => readFileSync(s.meta)).toThrow(/ENOENT/);
  });
});
