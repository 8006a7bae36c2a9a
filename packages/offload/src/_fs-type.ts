import { statfsSync } from 'node:fs';
import { dirname } from 'node:path';

// statfs f_type magic numbers of file systems whose files live in RAM (linux/magic.h).
const MEMORY_BACKED: ReadonlyMap<number, string> = new Map([
  [0x01021994, 'tmpfs'],
  [0x858458f6, 'ramfs'],
]);

/**
 * The name of the RAM-backed file system (`tmpfs`, `ramfs`) that holds `path` (or its deepest
 * existing ancestor), else `null` — also when statfs cannot answer. Scratch files there do not
 * leave RAM: they are memory that a memory limit counts and no writeback can free.
 */
export function memoryBackedFs(path: string): string | null {
  let p = path;
  for (;;) {
    try {
      return MEMORY_BACKED.get(Number(statfsSync(p).type)) ?? null;
    } catch {
      const parent = dirname(p);
      if (parent === p) return null;
      p = parent;
    }
  }
}

/** The warning for a scratch directory on a RAM-backed file system. */
export function memoryBackedWarning(saveDir: string, fsType: string): string {
  return (
    `save_dir '${saveDir}' is on ${fsType}, which keeps files in RAM: activations offloaded there do not leave ` +
    `memory. ` +
    'Pick a directory on a disk-backed file system (saveDir / save_dir).'
  );
}
