import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { useTempDir } from '@soup/test-utils';
import { InvalidBatchOptionError, NoBatchFitsError, OutOfMemoryError } from './errors';
import { loadCache } from './load-cache';
import { makeCacheKey, type CacheKeyFields } from './make-cache-key';
import { pickBatchSize, type PickBatchSizeOptions } from './pick-batch-size';
import type { ProbeFn } from './types';
import { TINY_GPT_KEY } from './_fixtures/tiny-gpt-key';

const fields: CacheKeyFields = { ...TINY_GPT_KEY };

function setup() {
  const root = useTempDir('soup-bp-pick-');
  const path = join(root, 'batch_cache.json');
  const warnings: string[] = [];
  const infos: string[] = [];
  const base = {
    ...fields,
    homeDir: root,
    cwd: root,
    tmpDir: root,
    env: { SOUP_BATCH_CACHE_PATH: path },
    logger: { warn: (m: string) => void warnings.push(m), info: (m: string) => void infos.push(m) },
  };
  return { root, path, warnings, infos, base };
}

function capacityProbe(capacity: number): ProbeFn & { calls: number[] } {
  const calls: number[] = [];
  return Object.assign(
    async (b: number) => {
      calls.push(b);
      if (b > capacity) throw new OutOfMemoryError('oom');
      return { fits: true };
    },
    { calls },
  );
}

describe('pickBatchSize', () => {
  test('static returns the estimate and never probes', async () => {
    const { base } = setup();
    const probe = capacityProbe(100);
    expect(await pickBatchSize({ ...base, staticEstimate: 6, strategy: 'static', probe })).toEqual({
      batchSize: 6,
      source: 'static',
      trials: [],
    });
    expect(probe.calls).toEqual([]);
  });

  test('auto without a probe returns the estimate silently; probe without one warns with the advisory', async () => {
    const { base, warnings } = setup();
    expect((await pickBatchSize({ ...base, staticEstimate: 6, strategy: 'auto' })).batchSize).toBe(6);
    expect(warnings).toEqual([]);
    expect(await pickBatchSize({ ...base, staticEstimate: 6, strategy: 'probe' })).toMatchObject({
      batchSize: 6,
      source: 'static',
    });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      /strategy 'probe' was requested but no probe is available: using the static estimate \(6\)/,
    );
  });

  test('a miss probes up to 4 x the estimate by default, then saves; the next call is a cache hit', async () => {
    const { base, path, infos } = setup();
    const probe = capacityProbe(1000);
    const first = await pickBatchSize({ ...base, staticEstimate: 8, strategy: 'auto', probe });
    expect(first).toMatchObject({
      batchSize: 32,
      source: 'probe',
      saved: true,
      cachePath: path,
      cacheKey: makeCacheKey(fields),
    });
    expect(Math.max(...probe.calls)).toBe(32);
    expect(first.trials.map((t) => t.batchSize)).toEqual(probe.calls);
    expect(await loadCache(base)).toEqual({ dcaa220005fb718e145b37b330901237: 32 });

    const again = capacityProbe(1000);
    const second = await pickBatchSize({ ...base, staticEstimate: 8, strategy: 'probe', probe: again });
    expect(second).toMatchObject({ batchSize: 32, source: 'cache', trials: [] });
    expect(again.calls).toEqual([]);
    expect(infos.some((m) => m.includes('from the cache'))).toBe(true);
  });

  test('an exact answer above a later, lower ceiling: the ceiling from the cache, no trial', async () => {
    const { base, infos } = setup();
    const first = await pickBatchSize({
      ...base,
      staticEstimate: 8,
      strategy: 'auto',
      probe: capacityProbe(45),
      ceiling: 64,
    });
    expect(first).toMatchObject({ batchSize: 45, source: 'probe', saved: true, bound: 'exact' });
    const again = capacityProbe(45);
    const capped = await pickBatchSize({ ...base, staticEstimate: 8, strategy: 'auto', probe: again, ceiling: 32 });
    expect(capped).toMatchObject({ batchSize: 32, source: 'cache', cappedFrom: 45, trials: [] });
    expect(again.calls).toEqual([]);
    expect(infos.at(-1)).toMatch(/batch size 32 from the cache .*the cache's 45 fits, capped by the ceiling\)$/);
    expect(await loadCache(base)).toEqual({ [makeCacheKey(fields)]: 45 });
  });

  test('refine finds the exact edge; refine:false reproduces the original', async () => {
    const { base } = setup();
    const refined = await pickBatchSize({ ...base, staticEstimate: 16, strategy: 'auto', probe: capacityProbe(45) });
    expect(refined.batchSize).toBe(45);
    const { base: other } = setup();
    const classic = await pickBatchSize({
      ...other,
      staticEstimate: 16,
      strategy: 'auto',
      probe: capacityProbe(45),
      refine: false,
    });
    expect(classic.batchSize).toBe(32);
  });

  test('an explicit ceiling, multipleOf and onTrial reach the search', async () => {
    const { base } = setup();
    const probe = capacityProbe(1000);
    const seen: number[] = [];
    const r = await pickBatchSize({
      ...base,
      staticEstimate: 8,
      strategy: 'auto',
      probe,
      ceiling: 100,
      multipleOf: 8,
      onTrial: (t) => void seen.push(t.batchSize),
    });
    expect(r.batchSize).toBe(96);
    expect(seen).toEqual(probe.calls);
    expect(probe.calls.every((b) => b <= 100 && b % 8 === 0)).toBe(true);
  });

  test('a cache written by the Python Soup CLI is a hit', async () => {
    const { base, path } = setup();
    writeFileSync(path, '{\n  "dcaa220005fb718e145b37b330901237": 24\n}');
    const probe = capacityProbe(1000);
    expect(await pickBatchSize({ ...base, staticEstimate: 8, strategy: 'auto', probe })).toMatchObject({
      batchSize: 24,
      source: 'cache',
    });
    expect(probe.calls).toEqual([]);
  });

  test('a failed save warns and still returns the probed size', async () => {
    const { base, root, warnings } = setup();
    mkdirSync(join(root, 'blocked'));
    writeFileSync(join(root, 'blocked', 'file'), '');
    const env = { SOUP_BATCH_CACHE_PATH: join(root, 'blocked', 'file', 'cache.json') };
    const r = await pickBatchSize({ ...base, env, staticEstimate: 4, strategy: 'auto', probe: capacityProbe(10) });
    expect(r).toMatchObject({ batchSize: 10, source: 'probe', saved: false });
    expect(warnings.some((w) => w.startsWith('could not save batch size 10'))).toBe(true);
  });

  test('an out-of-bounds override is reported and not used', async () => {
    const { base, root, warnings } = setup();
    const r = await pickBatchSize({
      ...base,
      tmpDir: join(root, 'tmp-anchor'),
      cwd: join(root, 'cwd-anchor'),
      homeDir: join(root, 'home'),
      env: { SOUP_BATCH_CACHE_PATH: join(root, 'elsewhere.json') },
      staticEstimate: 4,
      strategy: 'auto',
      probe: capacityProbe(4),
    });
    expect(r.cachePath).toBe(join(root, 'home', '.soup', 'batch_cache.json'));
    expect(warnings.some((w) => w.includes('ignored'))).toBe(true);
  });

  test('NoBatchFitsError propagates and nothing is cached', async () => {
    const { base } = setup();
    await expect(
      pickBatchSize({ ...base, staticEstimate: 4, strategy: 'auto', probe: capacityProbe(0) }),
    ).rejects.toBeInstanceOf(NoBatchFitsError);
    expect(await loadCache(base)).toEqual({});
  });

  test('a custom isOom is used', async () => {
    const { base } = setup();
    const probe: ProbeFn = async (b) => {
      if (b > 5) throw new Error('CUDA error: out of memory');
      return { fits: true };
    };
    const r = await pickBatchSize({
      ...base,
      staticEstimate: 4,
      strategy: 'auto',
      probe,
      isOom: (e) => /out of memory/.test(String(e)),
    });
    expect(r.batchSize).toBe(5);
  });

  test.each([
    ['staticEstimate', { staticEstimate: 0 }],
    ['staticEstimate', { staticEstimate: true }],
    ['staticEstimate', { staticEstimate: 2.5 }],
    ['strategy', { strategy: 'fastest' }],
    ['ceiling', { ceiling: 2 }],
    ['maxLength', { maxLength: '128' }],
  ])('rejects a bad %s', async (field, patch) => {
    const { base } = setup();
    const options = {
      ...base,
      staticEstimate: 4,
      strategy: 'auto',
      probe: capacityProbe(8),
      ...patch,
    } as unknown as PickBatchSizeOptions;
    const err = await pickBatchSize(options).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidBatchOptionError);
    expect((err as InvalidBatchOptionError).field).toBe(field);
  });
});
