// The tuner's cache: `tune_cache.json` beside the batch cache (`~/.soup/tune_cache.json`). The
// batch cache stays what the Python CLI reads (key → micro-batch); a choice between
// configurations, with what it was measured on, lives here.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import {
  resolveCachePath,
  writeCacheFileLocked,
  type CacheLocationOptions,
  type CacheLockOptions,
} from '@soup/batch-probe';

export const TUNE_CACHE_VERSION = 1;

/** One candidate's row as it was measured. */
export interface TuneRow {
  label: string;
  values: Record<string, string>;
  microBatchSize: number | null;
  accumulation: number | null;
  peakBytes: number | null;
  stepMs: number | null;
  noiseMs: number | null;
  samplesPerSecond: number | null;
  /** Why it has no time (nothing fits, stopped early, the timing run failed). */
  note: string | null;
  /**
   * Its first timing and that timing's note, when a tie had it timed again (the figures and note above are then
   * the side-by-side ones).
   */
  firstTiming?: { stepMs: number; noiseMs: number | null; samplesPerSecond: number; note?: string | null };
}

/** A remembered choice and its provenance. */
export interface TuneEntry {
  /** Index into `rows`. */
  chosen: number;
  reason: string;
  rows: TuneRow[];
  globalBatchSize: number;
  worldSize: number;
  /** K: the timing runs were 1, 1 + K and 1 + 2K steps. */
  timeSteps: number;
  /**
   * What the step times were measured by (the output's span or the wall time), as a sentence; absent in older entries.
   */
  timedBy?: string;
  budgetBytes: number | null;
  gpuName: string;
  gpuMemoryGb: number;
  /** The command as typed, placeholders in (a token in it as its sha256: see TuneExecOptions.trainer). */
  command: string;
  /** The hashes of the files the command names and the sources it may import, as keyed; absent in older entries. */
  files?: Record<string, string>;
  savedAt: string;
}

/** `<dir of the batch cache>/tune_cache.json`. */
export function resolveTuneCachePath(options: CacheLocationOptions = {}): string {
  return join(dirname(resolveCachePath(options).path), 'tune_cache.json');
}

/**
 * The key: the command template, the levers tried, G, world size, budget and device; K (`timeSteps`) and the digest
 * of the trainer's files when given. A key without them (an older entry) never equals one with them.
 */
export function makeTuneKey(k: {
  command: string;
  tries: Record<string, string[]>;
  globalBatchSize: number;
  worldSize: number;
  budgetBytes: number | null;
  gpuName: string;
  gpuMemoryGb: number;
  timeSteps?: number;
  files?: Record<string, string>;
}): string {
  const tries = Object.keys(k.tries)
    .sort()
    .map((n) => `${n}=${k.tries[n]!.join(',')}`)
    .join(';');
  const names = Object.keys(k.files ?? {}).sort();
  // Up to thousands of sources: their digest, not their list (the entry lists them).
  const files =
    names.length === 0
      ? ''
      : `|files:${names.length}@${createHash('sha256')
          .update(names.map((f) => `${f}@${k.files![f]}`).join('\n'))
          .digest('hex')
          .slice(0, 12)}`;
  const steps = k.timeSteps !== undefined ? `|K:${k.timeSteps}` : '';
  return (
    `exec:${k.command}|try:${tries}|G:${k.globalBatchSize}|N:${k.worldSize}|budget:` +
    `${k.budgetBytes ?? 'device'}|${k.gpuName}|${k.gpuMemoryGb}${steps}${files}`
  );
}

function validEntry(v: unknown): v is TuneEntry {
  if (typeof v !== 'object' || v === null) return false;
  const e = v as Partial<TuneEntry>;
  return (
    Array.isArray(e.rows) &&
    typeof e.chosen === 'number' &&
    e.chosen >= 0 &&
    e.chosen < e.rows.length &&
    typeof e.globalBatchSize === 'number' &&
    typeof e.savedAt === 'string'
  );
}

function readAll(path: string): Record<string, TuneEntry> {
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return {};
  }
  if (typeof data !== 'object' || data === null || (data as { version?: unknown }).version !== TUNE_CACHE_VERSION)
    return {};
  const entries = (data as { entries?: unknown }).entries;
  if (typeof entries !== 'object' || entries === null || Array.isArray(entries)) return {};
  const out: Record<string, TuneEntry> = Object.create(null) as Record<string, TuneEntry>;
  for (const [key, value] of Object.entries(entries)) if (validEntry(value)) out[key] = value;
  return out;
}

/** The remembered choice for `key`, or undefined (a missing, corrupt or other-version file is empty). */
export function lookupTuneEntry(key: string, location: CacheLocationOptions = {}): TuneEntry | undefined {
  const all = readAll(resolveTuneCachePath(location));
  return Object.hasOwn(all, key) ? all[key] : undefined;
}

/** Remembers `entry` under `key` (locked read-modify-write, atomic replace: a second writer's entries stay). */
export async function saveTuneEntry(
  key: string,
  entry: TuneEntry,
  options: CacheLocationOptions & CacheLockOptions = {},
): Promise<string> {
  const path = resolveTuneCachePath(options);
  await writeCacheFileLocked(
    path,
    () => {
      const all = readAll(path);
      all[key] = entry;
      const sorted: Record<string, TuneEntry> = Object.create(null) as Record<string, TuneEntry>;
      for (const k of Object.keys(all).sort()) sorted[k] = all[k]!;
      return `${JSON.stringify({ version: TUNE_CACHE_VERSION, entries: sorted }, null, 2)}\n`;
    },
    options,
  );
  return path;
}
