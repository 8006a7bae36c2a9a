import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { chmod, mkdir, open, readFile, rename, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import { CorruptCacheError } from './errors';

/** Cache entries by key. A Map, so a key like `__proto__` is just a key. */
export type CacheMap = Map<string, number>;

/**
 * Reads the cache file tolerantly, like the original: a missing, unreadable or corrupt file, or
 * one that is not a JSON object, reads as empty; entries whose value is not a positive integer
 * are dropped, the others kept.
 */
export async function readCacheFile(path: string): Promise<CacheMap> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return new Map();
  }
  return parseCacheText(text);
}

/**
 * Reads the cache file for a command that shows or rewrites it: a missing or empty file is an empty cache, but a
 * file that is not a JSON object throws {@link CorruptCacheError}, so it is neither listed as empty nor overwritten.
 * Entries whose value is not a positive integer are dropped, as {@link readCacheFile} drops them.
 */
export async function readCacheFileStrict(path: string): Promise<CacheMap> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
    throw err;
  }
  if (text.trim() === '') return new Map();
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new CorruptCacheError(path, `not JSON: ${(err as Error).message}`);
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new CorruptCacheError(path, `not a JSON object: ${Array.isArray(data) ? 'an array' : String(data)}`);
  }
  return parseCacheText(text);
}

/**
 * One entry of the cache file, read as {@link readCacheFile} reads the whole (a corrupt file or a
 * value that is not a positive integer is no entry). A cache hit reads the file synchronously
 * (a few KB: 0.04 ms, against 0.8 ms through the thread pool) and checks only its own key.
 */
export function readCacheValue(path: string, key: string): number | undefined {
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return undefined;
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data) || !Object.hasOwn(data, key)) return undefined;
  const value = (data as Record<string, unknown>)[key];
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : undefined;
}

/** Parses cache text tolerantly (see {@link readCacheFile}). */
export function parseCacheText(text: string): CacheMap {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return new Map();
  }
  const out: CacheMap = new Map();
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return out;
  for (const [key, value] of Object.entries(data)) {
    if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) out.set(key, value);
  }
  return out;
}

/**
 * The file text Python's `json.dump(cache, fh, indent=2, sort_keys=True)` writes: two-space
 * indent, keys sorted, no trailing newline, every character outside printable ASCII escaped as
 * `\uXXXX` (Python's default `ensure_ascii`).
 */
export function serializeCache(cache: CacheMap): string {
  const sorted = [...cache.keys()].sort(compareCodePoints);
  const obj: Record<string, number> = Object.create(null) as Record<string, number>;
  for (const key of sorted) obj[key] = cache.get(key)!;
  return JSON.stringify(obj, null, 2).replace(
    /[^\x20-\x7e\n]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

function compareCodePoints(a: string, b: string): number {
  // Python sorts str by code point; JS's default sort compares UTF-16 units. They differ only
  // between astral characters and U+E000..U+FFFF, so compare code points explicitly.
  const ai = a[Symbol.iterator]();
  const bi = b[Symbol.iterator]();
  for (;;) {
    const x = ai.next();
    const y = bi.next();
    if (x.done || y.done) return x.done === y.done ? 0 : x.done ? -1 : 1;
    const d = x.value.codePointAt(0)! - y.value.codePointAt(0)!;
    if (d !== 0) return d;
  }
}

/**
 * Writes `text` to `path` atomically: a fresh temp file beside it (created exclusive, mode 0600),
 * flushed, then renamed over `path`; the mode is set to 0600 again after the rename. Readers see
 * the old file or the new one, never a torn one. The temp file is removed on failure.
 */
export async function writeFileAtomic(path: string, text: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    const handle = await open(tmp, 'wx', 0o600);
    try {
      await handle.writeFile(text, 'utf8');
      await handle.datasync();
    } finally {
      await handle.close();
    }
    await rename(tmp, path);
  } catch (err) {
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
  await chmod(path, 0o600).catch(() => undefined); // best-effort, as the original (non-POSIX file systems)
}
