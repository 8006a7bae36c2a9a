import { makeCacheKey, saveCacheEntry } from '@soup/batch-probe';
import { useTempDir } from '@soup/test-utils';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { trainerChange } from './trainer-change';
import { execBase, trainerCacheBase } from './trainer-files';

describe('trainerChange: which files changed since an answer for the same trainer command', () => {
  it('names each changed file (old → new); none when the key has an answer or nothing earlier matches', async () => {
    const cwd = useTempDir();
    const env = { HOME: cwd, SOUP_BATCH_CACHE_PATH: join(cwd, 'cache.json') };
    const command = 'node train.mjs --bs {batch_size}';
    writeFileSync(join(cwd, 'train.mjs'), 'v1\n');
    const before = trainerCacheBase(command, { cwd });
    expect(before.base).toBe(execBase(command, before.files));
    const keyOf = (base: string) => ({
      base,
      maxLength: 512,
      quantization: 'none',
      loraR: 0,
      gpuName: 'cpu',
      gpuMemoryGb: 23,
    });
    const provenance = {
      base: before.base,
      maxLength: 512,
      gpuName: 'cpu',
      budgetBytes: null,
      ceiling: 32,
      bound: 'exact' as const,
      measurement: 'sampled-rss',
      files: before.files,
    };
    const key = makeCacheKey(keyOf(before.base));
    await saveCacheEntry({ key, batchSize: 8, env, cwd, provenance });
    expect(await trainerChange({ env, cwd, command, files: before.files, key: keyOf(before.base) })).toBeNull();

    writeFileSync(join(cwd, 'train.mjs'), 'v2\n');
    const now = trainerCacheBase(command, { cwd });
    const change = await trainerChange({ env, cwd, command, files: now.files, key: keyOf(now.base) });
    expect(change).toMatchObject({
      batchSize: 8,
      changed: [`train.mjs (${before.files['train.mjs']} → ${now.files['train.mjs']})`],
    });
    expect(change!.line).toMatch(
      /^trainer changed since the cached answer \(8, \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\): train\.mjs \([0-9a-f]{12} → [0-9a-f]{12}\); probing again$/,
    );
    const other = await trainerChange({ env, cwd, command: 'node other.mjs {batch_size}', files: {}, key: keyOf('x') });
    expect(other).toBeNull();
  });
});
