// A batch cache entry as a flat snake_case record: what `soup cache ls --json` prints, and what any other tool can
// write or parse alike (the cache file itself keeps the Python original's layout).
import type { CacheEntry } from './types';

/** {@link cacheEntryRecord}'s record of an entry's provenance: null fields where soup did not record one. */
export interface CacheProvenanceRecord {
  base: string;
  max_length: number;
  quantization: string | null;
  lora_r: number | null;
  gpu: string;
  gpu_memory_gb: number | null;
  budget_bytes: number | null;
  ceiling: number;
  bound: 'exact' | 'capped' | 'unproven';
  measurement: string;
  saved_at: string;
  note: string | null;
  /**
   * The short hashes of the files the measured command named and the sources it may import (what the key's base
   * digests), by name; null where none were recorded.
   */
  files: Record<string, string> | null;
}

/** {@link cacheEntryRecord}'s record of one entry. */
export interface CacheEntryRecord {
  key: string;
  batch_size: number;
  /** Null for an entry without provenance (written by the Python tool or an older soup). */
  provenance: CacheProvenanceRecord | null;
}

/** One entry of {@link listCacheEntries} as a record. */
export function cacheEntryRecord(e: CacheEntry): CacheEntryRecord {
  const p = e.provenance;
  return {
    key: e.key,
    batch_size: e.batchSize,
    provenance: p
      ? {
          base: p.base,
          max_length: p.maxLength,
          quantization: p.quantization ?? null,
          lora_r: p.loraR ?? null,
          gpu: p.gpuName,
          gpu_memory_gb: p.gpuMemoryGb ?? null,
          budget_bytes: p.budgetBytes,
          ceiling: p.ceiling,
          bound: p.bound,
          measurement: p.measurement,
          saved_at: p.savedAt,
          note: p.note ?? null,
          files: p.files ?? null,
        }
      : null,
  };
}

/** Whether `key` has the shape of a cache key: 32 lowercase hex characters, as {@link makeCacheKey} makes them. */
export function isCacheKey(key: string): boolean {
  return /^[0-9a-f]{32}$/.test(key);
}
