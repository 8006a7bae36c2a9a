import type { BuiltManifest } from './build-manifest';
import { sha256Hex } from './_fs';
import { MANIFEST_NAME } from './_layout';
import type { CheckpointStore, StoreEntry } from './types';

/** Whether the store's folder holds exactly this manifest and its files (names and sizes), nothing else. */
export async function holdsExactly(
  store: CheckpointStore,
  existing: StoreEntry[],
  built: BuiltManifest,
  pathInRepo: string,
  wanted: Set<string>,
): Promise<boolean> {
  if (existing.length !== wanted.size || !existing.every((e) => wanted.has(e.path))) return false;
  const sizes = new Map(built.files.map((f) => [`${pathInRepo}/${f.name}`, f.sizeBytes]));
  const manifestPath = `${pathInRepo}/${MANIFEST_NAME}`;
  if (!existing.every((e) => e.path === manifestPath || sizes.get(e.path) === e.sizeBytes)) return false;
  const theirs = await store.readFile({ path: manifestPath });
  return theirs !== null && sha256Hex(theirs) === built.sha256;
}
