// Disk offload's scratch folder: removed at the end when this run created it (each step deletes its files).
import type { SoupConfig } from '@soup/config';
import { existsSync, rmdirSync } from 'node:fs';
import { offloadChoicesOf } from './config-plan';

/**
 * The scratch folder this run's disk offload would create, null when there is none or it exists already
 * (with activation_offloading: auto, the disk candidate's folder, which tuning may create).
 */
export function ownOffloadScratch(config: SoupConfig, cwd: string): string | null {
  const scratchDir = offloadChoicesOf(config, cwd).find((o) => o?.saveDir)?.saveDir ?? null;
  return scratchDir !== null && !existsSync(scratchDir) ? scratchDir : null;
}

/** Removes the offload scratch folder if it is empty (each step deletes its own files). */
export function removeEmptyScratch(dir: string | null): void {
  if (dir === null) return;
  try {
    rmdirSync(dir);
  } catch {
    // not empty (someone else's files) or already gone: leave it
  }
}
