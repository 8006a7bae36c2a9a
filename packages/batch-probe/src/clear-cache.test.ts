import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { useTempDir } from '@soup/test-utils';
import { clearCache } from './clear-cache';
import { CacheWriteError } from './errors';
import { loadCache } from './load-cache';
import { saveCacheEntry } from './save-cache-entry';

function location() {
  const root = useTempDir('soup-bp-clear-');
  const path = join(root, 'cache', 'batch_cache.json');
  return { root, path, o: { homeDir: root, cwd: root, tmpDir: root, env: { SOUP_BATCH_CACHE_PATH: path } } };
}

test('clears one key, keeping the others (file stays 0600)', async () => {
  const { path, o } = location();
  await saveCacheEntry({ ...o, key: 'a', batchSize: 1 });
  await saveCacheEntry({ ...o, key: 'b', batchSize: 2 });
  expect(await clearCache({ ...o, key: 'a' })).toEqual({ path, removed: 1 });
  expect(await loadCache(o)).toEqual({ b: 2 });
  expect(statSync(path).mode & 0o777).toBe(0o600);
  expect(await clearCache({ ...o, key: 'missing' })).toEqual({ path, removed: 0 });
  expect(readFileSync(path, 'utf8')).toBe('{\n  "b": 2\n}');
});

test('clears everything by removing the file; clearing again is a no-op', async () => {
  const { path, o } = location();
  await saveCacheEntry({ ...o, key: 'a', batchSize: 1 });
  await saveCacheEntry({ ...o, key: 'b', batchSize: 2 });
  expect(await clearCache(o)).toEqual({ path, removed: 2 });
  expect(existsSync(path)).toBe(false);
  expect(await clearCache(o)).toEqual({ path, removed: 0 });
});

test('a failure throws CacheWriteError (the user asked for it directly)', async () => {
  const { root, o } = location();
  mkdirSync(join(root, 'cache'));
  mkdirSync(join(root, 'cache', 'batch_cache.json')); // a directory where the file should be
  writeFileSync(join(root, 'cache', 'batch_cache.json', 'x'), '');
  const err = await clearCache(o).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(CacheWriteError);
  expect((err as CacheWriteError).code).toBe('SOUP_BATCH_CACHE_WRITE');
  expect((err as CacheWriteError).cause).toBeInstanceOf(Error);
});

test('rejects an empty key', async () => {
  const { o } = location();
  await expect(clearCache({ ...o, key: '' })).rejects.toMatchObject({ field: 'key' });
});

test('a corrupt file: clearing one key refuses and keeps it; clearing the whole cache removes it', async () => {
  const { path, o } = location();
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, '{broken');
  await expect(clearCache({ ...o, key: 'a' })).rejects.toMatchObject({ code: 'SOUP_BATCH_CACHE_CORRUPT', path });
  expect(readFileSync(path, 'utf8')).toBe('{broken');
  expect(await clearCache(o)).toEqual({ path, removed: 0 });
  expect(existsSync(path)).toBe(false);
});
