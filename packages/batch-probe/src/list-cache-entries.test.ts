import { expect, test } from 'vitest';
import { useTempDir } from '@soup/test-utils';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { listCacheEntries } from './list-cache-entries';
import { saveCacheEntry } from './save-cache-entry';

test('lists the valid entries sorted by key', async () => {
  const root = useTempDir('soup-bp-ls-');
  const o = { homeDir: root, cwd: root, tmpDir: root, env: { SOUP_BATCH_CACHE_PATH: join(root, 'c.json') } };
  expect(await listCacheEntries(o)).toEqual([]);
  await saveCacheEntry({ ...o, key: 'b', batchSize: 2 });
  await saveCacheEntry({ ...o, key: 'a', batchSize: 1 });
  expect(await listCacheEntries(o)).toEqual([
    { key: 'a', batchSize: 1 },
    { key: 'b', batchSize: 2 },
  ]);
  writeFileSync(join(root, 'c.json'), '{"z": "nope", "y": 3}');
  expect(await listCacheEntries(o)).toEqual([{ key: 'y', batchSize: 3 }]);
});

test('a corrupt cache file is an error naming the file and the fix, not an empty cache', async () => {
  const root = useTempDir('soup-bp-ls-');
  const path = join(root, 'c.json');
  const o = { homeDir: root, cwd: root, tmpDir: root, env: { SOUP_BATCH_CACHE_PATH: path } };
  writeFileSync(path, '{broken');
  await expect(listCacheEntries(o)).rejects.toMatchObject({
    code: 'SOUP_BATCH_CACHE_CORRUPT',
    path,
    message: expect.stringContaining(`The batch cache ${path} is corrupt`),
  });
  await expect(listCacheEntries(o)).rejects.toThrow(/soup cache clear/);
  writeFileSync(path, '[1, 2]');
  await expect(listCacheEntries(o)).rejects.toMatchObject({ code: 'SOUP_BATCH_CACHE_CORRUPT' });
  writeFileSync(path, '');
  expect(await listCacheEntries(o)).toEqual([]);
});
