import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { useTempDir } from '@soup/test-utils';
import { resolveCachePath } from './resolve-cache-path';
import { saveCacheEntry } from './save-cache-entry';
import { existsSync, readdirSync } from 'node:fs';

/** home, cwd and tmp anchors plus an `outside` dir that is under none of them. */
function anchors() {
  const root = useTempDir('soup-bp-path-');
  const d = {
    homeDir: join(root, 'home'),
    cwd: join(root, 'cwd'),
    tmpDir: join(root, 'tmp'),
    outside: join(root, 'outside'),
  };
  for (const dir of Object.values(d)) mkdirSync(dir);
  return { root, ...d, fallback: join(d.homeDir, '.soup', 'batch_cache.json') };
}

describe('resolveCachePath', () => {
  test('default: ~/.soup/batch_cache.json when the variable is unset or empty', () => {
    const a = anchors();
    expect(resolveCachePath({ ...a, env: {} })).toEqual({ path: a.fallback, source: 'default' });
    expect(resolveCachePath({ ...a, env: { SOUP_BATCH_CACHE_PATH: '' } })).toEqual({
      path: a.fallback,
      source: 'default',
    });
  });

  test('an override under home, cwd or tmp is honoured (even when it does not exist yet)', () => {
    const a = anchors();
    for (const base of [a.homeDir, a.cwd, a.tmpDir]) {
      const p = join(base, 'deep', 'er', 'cache.json');
      expect(resolveCachePath({ ...a, env: { SOUP_BATCH_CACHE_PATH: p } })).toEqual({ path: p, source: 'env' });
    }
  });

  test('a relative override resolves against cwd', () => {
    const a = anchors();
    expect(resolveCachePath({ ...a, env: { SOUP_BATCH_CACHE_PATH: 'sub/cache.json' } }).path).toBe(
      join(a.cwd, 'sub', 'cache.json'),
    );
  });

  test('an override escaping with .. falls back to the default', () => {
    const a = anchors();
    const escaping = join(a.tmpDir, '..', 'outside', 'cache.json');
    expect(resolveCachePath({ ...a, env: { SOUP_BATCH_CACHE_PATH: escaping } })).toEqual({
      path: a.fallback,
      source: 'default',
      ignoredOverride: escaping,
    });
    expect(resolveCachePath({ ...a, env: { SOUP_BATCH_CACHE_PATH: '../../outside/cache.json' } }).source).toBe(
      'default',
    );
  });

  test('a symlink pointing out of bounds falls back; its real path is what counts', () => {
    const a = anchors();
    symlinkSync(a.outside, join(a.tmpDir, 'link'));
    const viaLink = join(a.tmpDir, 'link', 'cache.json');
    expect(resolveCachePath({ ...a, env: { SOUP_BATCH_CACHE_PATH: viaLink } })).toMatchObject({
      source: 'default',
      ignoredOverride: viaLink,
    });
    // The file itself as a dangling link out of bounds.
    symlinkSync(join(a.outside, 'x.json'), join(a.homeDir, 'cache-link.json'));
    expect(resolveCachePath({ ...a, env: { SOUP_BATCH_CACHE_PATH: join(a.homeDir, 'cache-link.json') } }).source).toBe(
      'default',
    );
  });

  test('.. after a symlink climbs from the link target, as the kernel does (not lexically)', () => {
    const a = anchors();
    mkdirSync(join(a.outside, 'inner'));
    symlinkSync(join(a.outside, 'inner'), join(a.tmpDir, 'link'));
    // Lexically this is <tmp>/cache.json; for the kernel it is <outside>/cache.json.
    const tricky = `${join(a.tmpDir, 'link')}/../cache.json`;
    expect(resolveCachePath({ ...a, env: { SOUP_BATCH_CACHE_PATH: tricky } }).source).toBe('default');
  });

  test('a symlink that stays in bounds resolves to its real path', () => {
    const a = anchors();
    mkdirSync(join(a.homeDir, 'real'));
    symlinkSync(join(a.homeDir, 'real'), join(a.tmpDir, 'link'));
    expect(resolveCachePath({ ...a, env: { SOUP_BATCH_CACHE_PATH: join(a.tmpDir, 'link', 'c.json') } })).toEqual({
      path: join(a.homeDir, 'real', 'c.json'),
      source: 'env',
    });
  });

  test('anchors are compared by real path too (a home reached through a symlink)', () => {
    const a = anchors();
    const homeLink = join(a.root, 'home-link');
    symlinkSync(a.homeDir, homeLink);
    const p = join(a.homeDir, 'c.json');
    expect(resolveCachePath({ ...a, homeDir: homeLink, env: { SOUP_BATCH_CACHE_PATH: p } })).toEqual({
      path: p,
      source: 'env',
    });
  });

  test('a symlink loop falls back', () => {
    const a = anchors();
    symlinkSync(join(a.tmpDir, 'b'), join(a.tmpDir, 'a'));
    symlinkSync(join(a.tmpDir, 'a'), join(a.tmpDir, 'b'));
    expect(resolveCachePath({ ...a, env: { SOUP_BATCH_CACHE_PATH: join(a.tmpDir, 'a', 'c.json') } }).source).toBe(
      'default',
    );
  });

  test('a sibling directory sharing the prefix is not "under" the anchor', () => {
    const a = anchors();
    mkdirSync(`${a.tmpDir}-evil`);
    expect(resolveCachePath({ ...a, env: { SOUP_BATCH_CACHE_PATH: `${a.tmpDir}-evil/c.json` } }).source).toBe(
      'default',
    );
  });

  test('a refused override is never written: the save lands in the default file', async () => {
    const a = anchors();
    symlinkSync(a.outside, join(a.tmpDir, 'link'));
    const r = await saveCacheEntry({
      ...a,
      env: { SOUP_BATCH_CACHE_PATH: join(a.tmpDir, 'link', 'cache.json') },
      key: 'k',
      batchSize: 3,
    });
    expect(r).toEqual({ saved: true, path: a.fallback });
    expect(readdirSync(a.outside)).toEqual([]);
    expect(existsSync(a.fallback)).toBe(true);
  });
});
