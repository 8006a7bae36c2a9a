import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { useTempDir } from '@soup/test-utils';
import { describe, expect, test } from 'vitest';
import { listCacheEntries } from './list-cache-entries';
import { lowerCacheEntry } from './lower-cache-entry';
import { makeCacheKey, type CacheKeyFields } from './make-cache-key';
import { pickBatchSize } from './pick-batch-size';
import type { ProbeFn } from './types';

const fields: CacheKeyFields = {
  base: 'exec:python train.py',
  maxLength: 512,
  quantization: 'none',
  loraR: 0,
  gpuName: 'cpu',
  gpuMemoryGb: 23,
};

function capacity(c: number): ProbeFn & { calls: number[] } {
  const calls: number[] = [];
  const fn = (async (b: number) => {
    calls.push(b);
    return { fits: b <= c, peakBytes: b * 10, budgetBytes: 1000, measurement: 'peak-rss' };
  }) as ProbeFn & { calls: number[] };
  fn.calls = calls;
  return fn;
}

describe('lowerCacheEntry (a mid-run out-of-memory)', () => {
  test(
    'lowers 16 to 8 with its note; the main file stays key → int; the next search of G = 32 takes 8 ' +
      'from the cache without probing',
    async () => {
      const root = useTempDir('soup-bp-lower-');
      const loc = { homeDir: root, cwd: root, env: { SOUP_BATCH_CACHE_PATH: join(root, 'batch_cache.json') } };
      const first = await pickBatchSize({
        ...fields,
        ...loc,
        staticEstimate: 32,
        strategy: 'probe',
        probe: capacity(20),
        globalBatchSize: 32,
      });
      expect(first).toMatchObject({ batchSize: 16, source: 'probe', saved: true });
      const key = makeCacheKey(fields);
      const r = await lowerCacheEntry({
        ...fields,
        ...loc,
        key,
        failedBatchSize: 16,
        batchSize: 8,
        note: 'mid-run OOM at step 6',
      });
      expect(r).toMatchObject({ lowered: true, previous: 16 });
      expect(JSON.parse(readFileSync(join(root, 'batch_cache.json'), 'utf8'))).toEqual({ [key]: 8 });
      const [entry] = await listCacheEntries(loc);
      expect(entry!.provenance).toMatchObject({
        batchSize: 8,
        note: 'mid-run OOM at step 6',
        ceiling: 16,
        bound: 'exact',
      });
      const probe = capacity(20);
      const next = await pickBatchSize({
        ...fields,
        ...loc,
        staticEstimate: 32,
        strategy: 'probe',
        probe,
        globalBatchSize: 32,
      });
      expect(next).toMatchObject({ batchSize: 8, source: 'cache' });
      expect(probe.calls).toEqual([]);
      // Never raised: an entry already at or below stays.
      expect(
        await lowerCacheEntry({ ...fields, ...loc, key, failedBatchSize: 16, batchSize: 8, note: 'again' }),
      ).toMatchObject({ lowered: false, previous: 8 });
      // A key with no entry gets none: a failure proves the old size wrong, not the new one right.
      expect(
        await lowerCacheEntry({ ...fields, ...loc, key: 'f'.repeat(32), failedBatchSize: 16, batchSize: 8, note: 'x' }),
      ).toMatchObject({ lowered: false, previous: null });
      expect(Object.keys(JSON.parse(readFileSync(join(root, 'batch_cache.json'), 'utf8')) as object)).toEqual([key]);
    },
  );
});
