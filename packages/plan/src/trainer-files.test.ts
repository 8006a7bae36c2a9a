import { listCacheEntries, saveCacheEntry } from '@soup/batch-probe';
import { useTempDir } from '@soup/test-utils';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { redactCommand, trainerCacheBase } from './trainer-files';

const HF = `hf_${'a1B2c3D4e5'.repeat(4)}`;

describe('trainerCacheBase: a key in the trial command never reaches the batch cache', () => {
  it('keeps a sha256 of each key in the base (cache file, side file, cache ls); a changed key changes it', async () => {
    const cwd = useTempDir('soup-plan-base-');
    const env = { HOME: cwd, SOUP_BATCH_CACHE_PATH: join(cwd, 'cache.json') };
    const command =
      `python3 train.py --bs {batch_size} --hf-token=${HF} --wandb_key ` + '0123456789abcdef0123456789abcdef01';
    const { base } = trainerCacheBase(command, { cwd });
    expect(base).toMatch(
      /^exec:python3 train\.py --bs \{batch_size\} --hf-token=sha256:[0-9a-f]{64} --wandb_key sha256:/,
    );
    expect(trainerCacheBase(command.replace('e5', 'e6'), { cwd }).base).not.toBe(base);
    expect(trainerCacheBase('python3 train.py --bs {batch_size}', { cwd }).base).toBe(
      'exec:python3 train.py --bs {batch_size}',
    );
    const provenance = { base, maxLength: 0, gpuName: 'cpu', budgetBytes: null, ceiling: 8, bound: 'exact' as const };
    await saveCacheEntry({
      key: 'k',
      batchSize: 4,
      env,
      cwd,
      provenance: { ...provenance, measurement: 'sampled-rss' },
    });
    const stored = readFileSync(join(cwd, 'cache.meta.json'), 'utf8').concat(
      readFileSync(join(cwd, 'cache.json'), 'utf8'),
    );
    expect(stored).not.toContain(HF);
    expect(stored).not.toContain('0123456789abcdef');
    expect(JSON.stringify(await listCacheEntries({ env, cwd }))).not.toContain(HF);
  });

  it('shows a command with each key masked (mask), the rest as typed', () => {
    expect(redactCommand(`python3 train.py --bs {batch_size} --hf-token=${HF} --wandb_key abc`, 'mask')).toBe(
      'python3 train.py --bs {batch_size} --hf-token=hf_*** --wandb_key ***',
    );
  });
});
