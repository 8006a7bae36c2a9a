import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { useTempDir } from '@soup/test-utils';
import { describe, expect, test } from 'vitest';
import { listCacheEntries } from './list-cache-entries';
import { loadCache } from './load-cache';
import { lookupCacheEntry } from './lookup-cache-entry';
import { makeCacheKey } from './make-cache-key';
import { pickBatchSize } from './pick-batch-size';
import type { ProbeFn } from './types';
import { TINY_GPT_KEY } from './_fixtures/tiny-gpt-key';

// Runs the Python original's own cache functions against the files soup writes (and the
// reverse). The reference lives beside the clone, relative to the repo root: <root>/../shared/reference
// (SOUP_PYTHON_REFERENCE overrides).
const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const reference = process.env.SOUP_PYTHON_REFERENCE ?? resolve(repoRoot, '../shared/reference/batch_probe.py');
const python = process.env.PYTHON ?? '/usr/bin/python3';
const why = !existsSync(reference)
  ? `the Python reference ${reference} is not here (set SOUP_PYTHON_REFERENCE)`
  : spawnSync(python, ['-c', 'import json, hashlib'], { encoding: 'utf8' }).status !== 0
    ? `${python} cannot run`
    : null;
if (why) console.log(`skipping the Python cache compatibility test: ${why}`);

function py(code: string, env: Record<string, string>, cwd: string): string {
  const r = spawnSync(
    python,
    [
      '-c',
      `import sys, json; sys.path.insert(0, ${JSON.stringify(dirname(reference))}); import batch_probe as bp\n${code}`,
    ],
    {
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '', HOME: env.HOME!, SOUP_BATCH_CACHE_PATH: env.SOUP_BATCH_CACHE_PATH! },
      cwd,
    },
  );
  if (r.status !== 0) throw new Error(`python failed: ${r.stderr}`);
  return r.stdout.trim();
}

describe.skipIf(why !== null)('the batch cache with the Python original', () => {
  test('Python reads every entry soup writes (side file beside it), and soup reads Python’s', async () => {
    const root = useTempDir('soup-bp-py-');
    const path = join(root, '.soup', 'batch_cache.json');
    const env = { HOME: root, SOUP_BATCH_CACHE_PATH: path };
    const loc = { homeDir: root, cwd: root, tmpDir: root, env: { SOUP_BATCH_CACHE_PATH: path } };
    const fields = { ...TINY_GPT_KEY };
    const probe: ProbeFn = async (b) => ({
      fits: b <= 13,
      peakBytes: b * 10,
      budgetBytes: 135,
      measurement: 'peak-rss',
    });
    const r = await pickBatchSize({
      ...fields,
      ...loc,
      staticEstimate: 8,
      strategy: 'probe',
      probe,
      budgetBytes: 135,
      predict: true,
    });
    expect(r).toMatchObject({ batchSize: 13, saved: true });
    // Same key in both tools.
    expect(py(`print(bp.make_cache_key("soup/tiny-gpt", 128, "none", 0, "cpu", 23))`, env, root)).toBe(
      makeCacheKey(fields),
    );
    expect(existsSync(join(root, '.soup', 'batch_cache.meta.json'))).toBe(true);
    expect(JSON.parse(py('print(json.dumps(bp.load_cache()))', env, root))).toEqual({ [r.cacheKey!]: 13 });

    // Python adds an entry and overwrites soup's: soup reads both; the overwritten one has no provenance any more.
    py(
      `bp.save_cache_entry("feedfacefeedfacefeedfacefeedface", 7)\nbp.save_cache_entry(` +
        `${JSON.stringify(r.cacheKey)}, 20)`,
      env,
      root,
    );
    expect(await loadCache(loc)).toEqual({ [r.cacheKey!]: 20, feedfacefeedfacefeedfacefeedface: 7 });
    const listed = await listCacheEntries(loc);
    expect(listed.every((e) => e.provenance === undefined)).toBe(true);
    expect(await lookupCacheEntry({ ...loc, key: r.cacheKey!, ceiling: 32, budgetBytes: 135 })).toMatchObject({
      hit: false,
    });
    expect(await lookupCacheEntry({ ...loc, key: r.cacheKey!, ceiling: 32 })).toMatchObject({
      hit: true,
      batchSize: 20,
      provenance: null,
    });

    // soup writes again; Python still reads everything, as ints.
    const again = await pickBatchSize({
      ...fields,
      ...loc,
      staticEstimate: 8,
      strategy: 'probe',
      probe,
      budgetBytes: 135,
      refresh: true,
    });
    expect(again.saved).toBe(true);
    expect(JSON.parse(py('print(json.dumps(bp.load_cache()))', env, root))).toEqual({
      [r.cacheKey!]: 13,
      feedfacefeedfacefeedfacefeedface: 7,
    });
    expect((await listCacheEntries(loc)).find((e) => e.key === r.cacheKey)?.provenance).toMatchObject({
      batchSize: 13,
      budgetBytes: 135,
    });
  });
});
