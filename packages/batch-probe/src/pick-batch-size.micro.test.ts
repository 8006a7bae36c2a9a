import { join } from 'node:path';
import { useTempDir } from '@soup/test-utils';
import { describe, expect, test } from 'vitest';
import { loadCache } from './load-cache';
import { makeCacheKey, type CacheKeyFields } from './make-cache-key';
import { pickBatchSize } from './pick-batch-size';
import type { ProbeFn } from './types';
import { TINY_GPT_KEY } from './_fixtures/tiny-gpt-key';

const fields: CacheKeyFields = { ...TINY_GPT_KEY };

function capacity(c: number): ProbeFn & { calls: number[] } {
  const calls: number[] = [];
  const fn = (async (b: number) => {
    calls.push(b);
    return { fits: b <= c, peakBytes: b * 10, budgetBytes: c * 10 + 5, measurement: 'peak-rss' };
  }) as ProbeFn & { calls: number[] };
  fn.calls = calls;
  return fn;
}

describe('pickBatchSize with a global batch (micro-batch answers)', () => {
  test(
    'probes only divisors of G, caches the answer, and maps a cached size to the largest divisor ' + 'under it',
    async () => {
      const root = useTempDir('soup-bp-micro-');
      const loc = { homeDir: root, cwd: root, env: { SOUP_BATCH_CACHE_PATH: join(root, 'batch_cache.json') } };
      const probe = capacity(10);
      const r = await pickBatchSize({
        ...fields,
        ...loc,
        staticEstimate: 4,
        strategy: 'auto',
        probe,
        globalBatchSize: 24,
      });
      expect(r).toMatchObject({ batchSize: 8, source: 'probe', saved: true });
      expect(probe.calls.every((b) => 24 % b === 0)).toBe(true);
      expect((await loadCache(loc))[makeCacheKey(fields)]).toBe(8);
      // A later run with G = 12 on the same device: the largest divisor of 12 under the cached 8.
      const again = await pickBatchSize({
        ...fields,
        ...loc,
        staticEstimate: 4,
        strategy: 'auto',
        probe: capacity(10),
        globalBatchSize: 12,
      });
      expect(again).toMatchObject({ batchSize: 6, source: 'cache' });
      // static: the estimate rounded down to a divisor.
      expect(
        (await pickBatchSize({ ...fields, ...loc, staticEstimate: 5, strategy: 'static', globalBatchSize: 24 }))
          .batchSize,
      ).toBe(4);
    },
  );
});
