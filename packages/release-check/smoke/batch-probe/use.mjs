// Installed alone: search with a capacity closure, then a cache round trip in a temp file.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OutOfMemoryError, makeCacheKey, pickBatchSize, probeBatchSize } from '@soup/batch-probe';

const probe = async (bs) => {
  if (bs > 45) throw new OutOfMemoryError(`oom at ${bs}`);
  return { fits: true };
};
const { batchSize } = await probeBatchSize(probe, { start: 8, ceiling: 512 });
if (batchSize !== 45) throw new Error(`expected 45, got ${batchSize}`);
if (
  makeCacheKey({
    base: 'soup/tiny-gpt',
    maxLength: 128,
    quantization: 'none',
    loraR: 0,
    gpuName: 'cpu',
    gpuMemoryGb: 23,
  }) !== 'dcaa220005fb718e145b37b330901237'
)
  throw new Error('cache key recipe changed');
const dir = mkdtempSync(join(tmpdir(), 'soup-smoke-'));
try {
  const env = { SOUP_BATCH_CACHE_PATH: join(dir, 'cache.json') };
  const key = { base: 'm', maxLength: 64, quantization: 'none', loraR: 0, gpuName: 'cpu', gpuMemoryGb: 1 };
  const first = await pickBatchSize({ staticEstimate: 4, strategy: 'probe', ...key, probe, env });
  const second = await pickBatchSize({
    staticEstimate: 4,
    strategy: 'probe',
    ...key,
    probe: async () => {
      throw new Error('must hit the cache');
    },
    env,
  });
  if (second.batchSize !== first.batchSize || second.source !== 'cache')
    throw new Error(`cache miss: ${JSON.stringify(second)}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log('SMOKE OK');
