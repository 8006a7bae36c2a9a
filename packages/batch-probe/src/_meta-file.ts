// The provenance side file beside the batch cache (`batch_cache.meta.json` beside
// `batch_cache.json`). The main file stays exactly what the Python original reads and writes
// (key -> positive int); everything soup knows about how an answer was found lives here.
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { CacheProvenance } from './types';

export const META_VERSION = 1;

/** `<dir>/<name>.meta.json` for `<dir>/<name>.json`, else `<path>.meta.json`. */
export function metaPathOf(cachePath: string): string {
  const name = basename(cachePath);
  return join(dirname(cachePath), `${name.endsWith('.json') ? name.slice(0, -5) : name}.meta.json`);
}

const MEASUREMENTS = new Set([
  'peak-rss',
  'sampled-rss',
  'cuda-per-process',
  'cuda-device-delta',
  'exceptions-only',
  'unknown',
]);

function valid(v: unknown): v is CacheProvenance {
  if (typeof v !== 'object' || v === null) return false;
  const p = v as Record<string, unknown>;
  const posInt = (x: unknown) => typeof x === 'number' && Number.isSafeInteger(x) && x > 0;
  return (
    posInt(p.batchSize) &&
    typeof p.base === 'string' &&
    typeof p.maxLength === 'number' &&
    typeof p.gpuName === 'string' &&
    (p.budgetBytes === null || posInt(p.budgetBytes)) &&
    posInt(p.ceiling) &&
    (p.bound === 'exact' || p.bound === 'capped' || p.bound === 'unproven') &&
    typeof p.measurement === 'string' &&
    MEASUREMENTS.has(p.measurement) &&
    typeof p.savedAt === 'string'
  );
}

/**
 * Reads the side file tolerantly: missing, unreadable, corrupt or of another version reads as
 * empty, and an entry that does not have every field is dropped. It never breaks reading the
 * main file: an entry without provenance is looked up by the rule of `lookupCacheEntry`.
 */
export async function readMetaFile(path: string): Promise<Map<string, CacheProvenance>> {
  let data: unknown;
  try {
    data = JSON.parse(await readFile(path, 'utf8'));
  } catch {
    return new Map();
  }
  const out = new Map<string, CacheProvenance>();
  if (typeof data !== 'object' || data === null || (data as { version?: unknown }).version !== META_VERSION) return out;
  const entries = (data as { entries?: unknown }).entries;
  if (typeof entries !== 'object' || entries === null || Array.isArray(entries)) return out;
  for (const [key, value] of Object.entries(entries)) if (valid(value)) out.set(key, value);
  return out;
}

export function serializeMeta(meta: Map<string, CacheProvenance>): string {
  const entries: Record<string, CacheProvenance> = Object.create(null) as Record<string, CacheProvenance>;
  for (const key of [...meta.keys()].sort()) entries[key] = meta.get(key)!;
  return `${JSON.stringify({ version: META_VERSION, entries }, null, 2)}\n`;
}

/** The provenance of one key (a cache hit reads it synchronously, like the cache file). */
export function readMetaEntry(path: string, key: string): CacheProvenance | undefined {
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return undefined;
  }
  if (typeof data !== 'object' || data === null || (data as { version?: unknown }).version !== META_VERSION)
    return undefined;
  const entries = (data as { entries?: unknown }).entries;
  if (typeof entries !== 'object' || entries === null || Array.isArray(entries) || !Object.hasOwn(entries, key))
    return undefined;
  const value = (entries as Record<string, unknown>)[key];
  return valid(value) ? value : undefined;
}
