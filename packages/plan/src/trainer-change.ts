// "trainer changed": a trainer command with no cached answer under its key, but one for other file
// contents (same command text, device and max length), and which files changed since.
import { type CacheKeyFields, type CacheLocationOptions, listCacheEntries, makeCacheKey } from '@soup/batch-probe';
import { changedFiles, redactCommand } from './trainer-files';

/** An earlier answer for the same command with other files: its size, when it was saved, the files that differ. */
export interface TrainerChange {
  batchSize: number;
  savedAt: string;
  /** `name (old → new)`; empty when the earlier answer predates file hashes. */
  changed: string[];
  /** The change as one line: `trainer changed since the cached answer (N, <time>): <what>; probing again`. */
  line: string;
}

/** The newest earlier answer for `command` when its key (`key`, from `files`) has none; null otherwise. */
export async function trainerChange(
  o: CacheLocationOptions & { command: string; files: Record<string, string>; key: CacheKeyFields },
): Promise<TrainerChange | null> {
  const entries = await listCacheEntries({ env: o.env, cwd: o.cwd });
  const current = makeCacheKey(o.key);
  if (entries.some((e) => e.key === current)) return null;
  const command = redactCommand(o.command);
  const prefix = `exec:${command} files:`;
  const earlier = entries
    .map((e) => e.provenance)
    .filter(
      (p): p is NonNullable<typeof p> =>
        p !== undefined &&
        p.gpuName === o.key.gpuName &&
        p.maxLength === o.key.maxLength &&
        (p.base === `exec:${command}` || p.base.startsWith(prefix)),
    )
    .sort((a, b) => b.savedAt.localeCompare(a.savedAt))[0];
  if (earlier === undefined) return null;
  const changed = changedFiles(earlier.files ?? {}, o.files);
  return {
    batchSize: earlier.batchSize,
    savedAt: earlier.savedAt,
    changed,
    line:
      `trainer changed since the cached answer (${earlier.batchSize}, ${earlier.savedAt.replace(/\.\d+Z$/, 'Z')}): ` +
      `${changed.length > 0 ? changed.join(', ') : 'the cached answer predates file hashes'}; probing again`,
  };
}
