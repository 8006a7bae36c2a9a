import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { useTempDir } from '@soup/test-utils';
import { loadCache } from './load-cache';

function withFile(content: string | undefined) {
  const root = useTempDir('soup-bp-load-');
  const path = join(root, 'batch_cache.json');
  if (content !== undefined) writeFileSync(path, content);
  return { homeDir: root, cwd: root, tmpDir: root, env: { SOUP_BATCH_CACHE_PATH: path } };
}

test('a missing file reads as {}', async () => {
  expect(await loadCache(withFile(undefined))).toEqual({});
});

test.each([
  ['truncated JSON', '{"a": 1, "b'],
  ['not JSON at all', 'garbage\u0000\u0001'],
  ['an array', '[1, 2, 3]'],
  ['a number', '42'],
  ['null', 'null'],
  ['empty', ''],
])('a corrupt file (%s) reads as {}', async (_name, text) => {
  expect(await loadCache(withFile(text))).toEqual({});
});

test('wrong-typed entries are dropped, valid ones kept', async () => {
  const file = JSON.stringify({
    good: 8,
    zero: 0,
    negative: -4,
    float: 2.5,
    string: '16',
    bool: true,
    nil: null,
    object: { n: 1 },
    list: [4],
    huge: 2 ** 60,
    also_good: 1,
  });
  expect(await loadCache(withFile(file))).toEqual({ good: 8, also_good: 1 });
});

test('a key named __proto__ is plain data', async () => {
  const cache = await loadCache(withFile('{"__proto__": 4, "k": 2}'));
  expect(Object.keys(cache).sort()).toEqual(['__proto__', 'k']);
  expect(Object.getPrototypeOf(cache)).toBe(Object.prototype);
  expect(Object.getOwnPropertyDescriptor(cache, '__proto__')?.value).toBe(4);
});

test('a file written by the Python Soup CLI reads as is', async () => {
  // json.dump(..., indent=2, sort_keys=True) output, as Python writes it.
  const python = '{\n  "0123456789abcdef0123456789abcdef": 12,\n  "dcaa220005fb718e145b37b330901237": 32\n}';
  expect(await loadCache(withFile(python))).toEqual({
    '0123456789abcdef0123456789abcdef': 12,
    dcaa220005fb718e145b37b330901237: 32,
  });
});

test('a directory where the file should be reads as {}', async () => {
  const o = withFile(undefined);
  mkdirSync(o.env.SOUP_BATCH_CACHE_PATH);
  expect(await loadCache(o)).toEqual({});
});
