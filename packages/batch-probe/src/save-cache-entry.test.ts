import { spawnSync } from 'node:child_process';
import {
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  utimesSync,
  writeFileSync,
  existsSync,
  chmodSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import {
  giveToUnprivileged,
  runNodeUnprivileged,
  spawnUntil,
  unprivilegedUnavailable,
  useTempDir,
} from '@soup/test-utils';
import { pathToFileURL } from 'node:url';
import { CacheLockError, InvalidBatchOptionError } from './errors';
import { loadCache } from './load-cache';
import { makeCacheKey } from './make-cache-key';
import { saveCacheEntry } from './save-cache-entry';

const packageDir = join(import.meta.dirname, '..');

/** A sandbox: home, cwd and tmp anchors in one temp dir, and the cache override under tmp. */
function sandbox() {
  const root = useTempDir('soup-bp-save-');
  const dirs = { homeDir: join(root, 'home'), cwd: join(root, 'cwd'), tmpDir: join(root, 'tmp') };
  for (const d of Object.values(dirs)) mkdirSync(d);
  const path = join(dirs.tmpDir, 'cache', 'batch_cache.json');
  return { root, path, ...dirs, env: { SOUP_BATCH_CACHE_PATH: path } };
}

describe('saveCacheEntry', () => {
  test('creates the file with mode 0600, in the Python json.dump layout, keeping other entries', async () => {
    const s = sandbox();
    expect(await saveCacheEntry({ ...s, key: 'b', batchSize: 2 })).toEqual({ saved: true, path: s.path });
    expect(await saveCacheEntry({ ...s, key: 'a', batchSize: 16 })).toEqual({ saved: true, path: s.path });
    expect(await saveCacheEntry({ ...s, key: 'b', batchSize: 4 })).toMatchObject({ saved: true });
    // json.dump(cache, fh, indent=2, sort_keys=True): sorted keys, 2-space indent, no trailing newline.
    expect(readFileSync(s.path, 'utf8')).toBe('{\n  "a": 16,\n  "b": 4\n}');
    expect(statSync(s.path).mode & 0o777).toBe(0o600);
    expect(readdirSync(join(s.tmpDir, 'cache')).sort()).toEqual(['batch_cache.json']); // no temp or lock file left
  });

  test('mode 0600 also when it replaces a world-readable file', async () => {
    const s = sandbox();
    mkdirSync(join(s.tmpDir, 'cache'));
    writeFileSync(s.path, '{"old": 3}', { mode: 0o644 });
    await saveCacheEntry({ ...s, key: 'new', batchSize: 5 });
    expect(statSync(s.path).mode & 0o777).toBe(0o600);
    expect(await loadCache(s)).toEqual({ new: 5, old: 3 });
  });

  test('non-ASCII keys are escaped like Python ensure_ascii', async () => {
    const s = sandbox();
    await saveCacheEntry({ ...s, key: 'modèle-😀', batchSize: 7 });
    expect(readFileSync(s.path, 'utf8')).toBe('{\n  "mod\\u00e8le-\\ud83d\\ude00": 7\n}');
    expect(await loadCache(s)).toEqual({ 'modèle-😀': 7 });
  });

  test('a corrupt existing file is kept, not overwritten: saved false, the error names it and the fix', async () => {
    const s = sandbox();
    mkdirSync(join(s.tmpDir, 'cache'));
    writeFileSync(s.path, '{"half": 3, "wri');
    const r = await saveCacheEntry({ ...s, key: 'k', batchSize: 9 });
    expect(r.saved).toBe(false);
    expect(r.saved ? null : r.error).toMatchObject({ code: 'SOUP_BATCH_CACHE_CORRUPT', path: s.path });
    expect(r.saved ? '' : r.error.message).toMatch(/is corrupt .*soup cache clear/s);
    expect(readFileSync(s.path, 'utf8')).toBe('{"half": 3, "wri');
  });

  test('readers never see a torn file while writes go on', async () => {
    const s = sandbox();
    await saveCacheEntry({ ...s, key: 'first', batchSize: 1 });
    let done = false;
    let reads = 0;
    const reader = (async () => {
      while (!done) {
        const text = readFileSync(s.path, 'utf8');
        expect(() => JSON.parse(text)).not.toThrow();
        reads += 1;
        await new Promise((r) => setImmediate(r));
      }
    })();
    for (let i = 0; i < 60; i++) await saveCacheEntry({ ...s, key: `k${i}`, batchSize: i + 1 });
    done = true;
    await reader;
    expect(reads).toBeGreaterThan(10);
    expect(Object.keys(await loadCache(s))).toHaveLength(61);
  });

  test('best-effort: an unwritable location yields {saved: false}, no exception', async () => {
    const s = sandbox();
    writeFileSync(join(s.tmpDir, 'not-a-dir'), 'x');
    const env = { SOUP_BATCH_CACHE_PATH: join(s.tmpDir, 'not-a-dir', 'batch_cache.json') };
    const r = await saveCacheEntry({ ...s, env, key: 'k', batchSize: 4 });
    expect(r.saved).toBe(false);
    if (!r.saved) expect((r.error as NodeJS.ErrnoException).code).toMatch(/ENOTDIR|EEXIST/);
  });

  // Root writes anywhere: the save runs in a child under another uid (setpriv to nobody when root).
  test.skipIf(unprivilegedUnavailable() !== null)(
    'best-effort: a read-only home yields {saved: false} (in a child under another uid, also as root)',
    async () => {
      const s = sandbox();
      giveToUnprivileged(s.root);
      chmodSync(s.homeDir, 0o500);
      const dist = pathToFileURL(join(packageDir, 'dist', 'index.js')).href;
      const code = `const { saveCacheEntry } = await import(${JSON.stringify(dist)});
const r = await saveCacheEntry({ homeDir: ${JSON.stringify(s.homeDir)}, cwd: ${JSON.stringify(s.cwd)}, tmpDir: ${JSON.stringify(s.tmpDir)}, env: {}, key: 'k', batchSize: 4 });
process.stdout.write(JSON.stringify({ uid: process.getuid(), saved: r.saved, code: r.error?.code ?? null }));`;
      const r = await runNodeUnprivileged(code, { env: { PATH: process.env.PATH ?? '' } });
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout) as { uid: number; saved: boolean; code: string | null };
      expect(out.uid).not.toBe(0);
      expect(out).toMatchObject({ saved: false, code: 'EACCES' });
      expect(existsSync(join(s.homeDir, '.soup'))).toBe(false);
    },
  );

  test('rejects an empty key and a non-positive batch size, naming the field', async () => {
    const s = sandbox();
    await expect(saveCacheEntry({ ...s, key: '', batchSize: 4 })).rejects.toMatchObject({ field: 'key' });
    for (const batchSize of [0, -1, 2.5, true]) {
      const err = await saveCacheEntry({ ...s, key: 'k', batchSize: batchSize as number }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidBatchOptionError);
      expect((err as InvalidBatchOptionError).field).toBe('batchSize');
    }
    expect(existsSync(s.path)).toBe(false);
  });
});

describe('the cross-process lock', () => {
  function writeLock(lockPath: string, info: { pid: number; host: string; token: string }, ageMs = 0): void {
    mkdirSync(join(lockPath, '..'), { recursive: true });
    writeFileSync(lockPath, JSON.stringify({ ...info, createdAt: new Date().toISOString() }));
    if (ageMs > 0) {
      const t = (Date.now() - ageMs) / 1000;
      utimesSync(lockPath, t, t);
    }
  }

  test('a lock held by a live process makes writers wait, then give up with CacheLockError', async () => {
    const s = sandbox();
    writeLock(`${s.path}.lock`, { pid: process.pid, host: hostname(), token: 'held' });
    const t0 = Date.now();
    const r = await saveCacheEntry({ ...s, key: 'k', batchSize: 4, lockTimeoutMs: 300, staleLockMs: 60_000 });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
    expect(r.saved).toBe(false);
    if (!r.saved) {
      expect(r.error).toBeInstanceOf(CacheLockError);
      expect((r.error as CacheLockError).code).toBe('SOUP_BATCH_CACHE_LOCK_TIMEOUT');
    }
    expect(existsSync(`${s.path}.lock`)).toBe(true); // a live owner's lock is not broken
    expect(existsSync(s.path)).toBe(false);
  });

  test('a lock whose owner process is gone is broken at once', async () => {
    const s = sandbox();
    const dead = spawnSync(process.execPath, ['-e', '']).pid!;
    writeLock(`${s.path}.lock`, { pid: dead, host: hostname(), token: 'dead' });
    const t0 = Date.now();
    const r = await saveCacheEntry({ ...s, key: 'k', batchSize: 4, lockTimeoutMs: 5_000, staleLockMs: 60_000 });
    expect(r.saved).toBe(true);
    expect(Date.now() - t0).toBeLessThan(2_000);
    expect(existsSync(`${s.path}.lock`)).toBe(false);
    expect(await loadCache(s)).toEqual({ k: 4 });
  });

  test('a lock older than staleLockMs is broken even when its owner looks alive (pid reuse, other host)', async () => {
    for (const host of [hostname(), 'another-host']) {
      const s = sandbox();
      writeLock(`${s.path}.lock`, { pid: process.pid, host, token: 'old' }, 3_600_000);
      const r = await saveCacheEntry({ ...s, key: 'k', batchSize: 4, lockTimeoutMs: 5_000, staleLockMs: 1_000 });
      expect(r.saved).toBe(true);
    }
  });

  test('a fresh lock from another host is respected (its pid means nothing here)', async () => {
    const s = sandbox();
    writeLock(`${s.path}.lock`, { pid: 999_999_999, host: 'another-host', token: 'remote' });
    const r = await saveCacheEntry({ ...s, key: 'k', batchSize: 4, lockTimeoutMs: 200, staleLockMs: 60_000 });
    expect(r.saved).toBe(false);
  });

  test('concurrent writers in one process lose nothing', async () => {
    const s = sandbox();
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => saveCacheEntry({ ...s, key: `k${i}`, batchSize: i + 1 })),
    );
    expect(results.every((r) => r.saved)).toBe(true);
    const cache = await loadCache(s);
    expect(Object.keys(cache)).toHaveLength(40);
    for (let i = 0; i < 40; i++) expect(cache[`k${i}`]).toBe(i + 1);
  });

  test('[slow] 8 child processes x 50 writes: all 400 entries present', { timeout: 120_000 }, async () => {
    const s = sandbox();
    const goFile = join(s.root, 'go');
    const env = { ...process.env, HOME: s.homeDir, SOUP_BATCH_CACHE_PATH: s.path };
    const writers = 8;
    const count = 50;
    const children = await Promise.all(
      Array.from({ length: writers }, (_, i) =>
        spawnUntil(
          process.execPath,
          ['--import', 'tsx', 'src/_fixtures/cache-writer.ts', String(i), String(count), goFile],
          'ready',
          {
            cwd: packageDir,
            env,
            timeoutMs: 60_000,
          },
        ),
      ),
    );
    writeFileSync(goFile, ''); // every child is ready: start them together
    const exits = await Promise.all(children.map((c) => c.exited));
    for (const e of exits) expect(e.code, e.stderr).toBe(0);
    const summaries = exits.map(
      (e) => JSON.parse(e.stdout.trim().split('\n').pop()!) as { saved: number; errors: string[] },
    );
    expect(summaries.map((x) => x.saved)).toEqual(Array(writers).fill(count));

    const cache = await loadCache(s);
    expect(Object.keys(cache)).toHaveLength(writers * count);
    for (let i = 0; i < writers; i++) {
      for (let j = 0; j < count; j++) {
        const key = makeCacheKey({
          base: `writer-${i}`,
          maxLength: 128,
          quantization: 'none',
          loraR: 0,
          gpuName: 'cpu',
          gpuMemoryGb: j,
        });
        expect(cache[key]).toBe(i * 1000 + j + 1);
      }
    }
    expect(statSync(s.path).mode & 0o777).toBe(0o600);
    expect(readdirSync(join(s.tmpDir, 'cache'))).toEqual(['batch_cache.json']);
  });
});
