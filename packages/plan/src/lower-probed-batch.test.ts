import { lookupCacheEntry, makeCacheKey, saveCacheEntry } from '@soup/batch-probe';
import { useTempDir } from '@soup/test-utils';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { lowerProbedBatch } from './trainer-batch';

describe('lowerProbedBatch: a mid-run out-of-memory lowers the answer it ran with', () => {
  it('the entry becomes the stepped-down micro-batch, its note naming the step and both shapes', async () => {
    const dir = useTempDir();
    const env = { HOME: dir, SOUP_BATCH_CACHE_PATH: join(dir, 'cache.json') };
    const key = { base: 'exec:x', maxLength: 512, quantization: 'none', loraR: 0, gpuName: 'cpu', gpuMemoryGb: 23 };
    const cacheKey = makeCacheKey(key);
    await saveCacheEntry({ key: cacheKey, batchSize: 32, env, cwd: dir });
    const probed = { batchSize: 32, source: 'cache' as const, key, cacheKey, budgetBytes: null };
    const common = { env, cwd: dir, probed, globalBatchSize: 32, worldSize: 1 };
    const r = await lowerProbedBatch({ ...common, step: 6, from: 32, to: 16 });
    expect(r).toMatchObject({
      lowered: true,
      previous: 32,
      note: 'mid-run OOM at step 6 (micro 32 × 1 = 32 failed; stepped down to 16 × 2 = 32)',
    });
    const now = await lookupCacheEntry({ key: cacheKey, ceiling: 32, env, cwd: dir });
    expect(now).toMatchObject({ hit: true, batchSize: 16 });
    const again = await lowerProbedBatch({ ...common, step: null, from: 32, to: 16 });
    expect(again.lowered).toBe(false);
    expect(again.note).toBe('mid-run OOM at step unknown (micro 32 × 1 = 32 failed; stepped down to 16 × 2 = 32)');
  });
});
