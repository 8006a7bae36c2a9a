import { lookupCacheEntry, makeCacheKey, saveCacheEntry } from '@soup/batch-probe';
import { useTempDir } from '@soup/test-utils';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type MicroCacheLowered, microSuperviseOptions } from './micro-supervise-options';
import type { ProbedBatch, TrainerMicro } from './trainer-batch';

const key = { base: 'exec:x', maxLength: 512, quantization: 'none', loraR: 0, gpuName: 'cpu', gpuMemoryGb: 23 };
const resumed = { resumeFrom: null, step: null };
const oom = { step: 6, from: 8, to: 4, peak_bytes: null, error: 'CUDA out of memory' };

/** A real batch cache in a temp dir holding 8 for `key`, and a probe that answers it. */
async function setup(cache: boolean) {
  const dir = useTempDir();
  const env = { HOME: dir, SOUP_BATCH_CACHE_PATH: join(dir, 'cache.json') };
  const cacheKey = makeCacheKey(key);
  await saveCacheEntry({ key: cacheKey, batchSize: 8, env, cwd: dir });
  const asked: TrainerMicro[] = [];
  const seen: ProbedBatch[] = [];
  const lowered: MicroCacheLowered[] = [];
  const options = microSuperviseOptions({
    micro: { globalBatchSize: 16, worldSize: 1, headroom: 0.1 },
    probe: async (micro) => {
      asked.push(micro);
      return { batchSize: 8, source: 'cache', key, cacheKey, budgetBytes: null, levers: { lr: '1e-4' } };
    },
    maxOomRetries: 2,
    cache,
    env,
    cwd: dir,
    onMicroBatch: (p) => seen.push(p),
    onCacheLowered: (r) => lowered.push(r),
  });
  const entry = async () => lookupCacheEntry({ key: cacheKey, ceiling: 16, env, cwd: dir });
  return { options, asked, seen, lowered, entry };
}

describe('microSuperviseOptions: a global batch under supervise()', () => {
  it("each session's m from the probe; a step-down to the next divisor lowers the cache entry", async () => {
    const { options, asked, seen, lowered, entry } = await setup(true);
    expect(options).toMatchObject({ globalBatchSize: 16, worldSize: 1, maxOomRetries: 2 });
    // A step-down before any micro-batch was resolved has no cache entry to lower.
    await options.onOomStepDown!(oom);
    expect(lowered).toEqual([]);
    expect(await options.resolveMicroBatchSize!(resumed)).toEqual({
      microBatchSize: 8,
      source: 'cache',
      levers: { lr: '1e-4' },
    });
    expect(asked).toEqual([{ globalBatchSize: 16, worldSize: 1, headroom: 0.1 }]);
    expect(seen.map((p) => p.batchSize)).toEqual([8]);
    expect(options.nextMicroBatchSize!(8)).toBe(4);
    await options.onOomStepDown!(oom);
    expect(lowered).toHaveLength(1);
    expect(lowered[0]).toMatchObject({
      lowered: true,
      previous: 8,
      stepDown: { from: 8, to: 4 },
      note: 'mid-run OOM at step 6 (micro 8 × 2 = 16 failed; stepped down to 4 × 4 = 16)',
    });
    expect(await entry()).toMatchObject({ hit: true, batchSize: 4 });
  });

  it('with the cache off (--no-cache) a step-down leaves the entry as it is', async () => {
    const { options, lowered, entry } = await setup(false);
    await options.resolveMicroBatchSize!(resumed);
    await options.onOomStepDown!(oom);
    expect(lowered).toEqual([]);
    expect(await entry()).toMatchObject({ hit: true, batchSize: 8 });
  });
});
