import { checkpointPath, FINAL_PATH, MANIFEST_NAME } from './_layout';
import { scanCheckpoints } from './_scan';
import type { CheckpointStore, StoreEntry } from './types';

/** Options of {@link listCheckpoints}. */
export interface ListCheckpointsOptions {
  store: CheckpointStore;
}

/** One checkpoint folder of a store, counted as a push counts it. */
export interface ListedCheckpoint {
  /** The step; null for `final/` (its step is in its manifest). */
  step: number | null;
  /** `ckpt/checkpoint-<step>` or `final`. */
  pathInRepo: string;
  /** Files of the checkpoint, manifest.json not counted. */
  fileCount: number;
  /** Their bytes, manifest.json not counted. */
  totalBytes: number;
  /**
   * When its manifest.json was written (ISO 8601): the push's last write, so the time it was pushed. Null
   * without a manifest (an incomplete push) or where the store keeps no time.
   */
  pushedAt: string | null;
}

/** What {@link listCheckpoints} found. */
export interface CheckpointList {
  /** Whether the store exists at all. */
  exists: boolean;
  /** The `ckpt/` folders, ascending by step, then `final/` when it has files. */
  checkpoints: ListedCheckpoint[];
}

/** Lists a store's checkpoints (step, files, bytes, pushed when) without reading any checkpoint's bytes. */
export async function listCheckpoints(opts: ListCheckpointsOptions): Promise<CheckpointList> {
  const { store } = opts;
  if (!(await store.exists())) return { exists: false, checkpoints: [] };
  const bySteps = await scanCheckpoints(store);
  const folders: { step: number | null; pathInRepo: string; entries: StoreEntry[] }[] = [...bySteps.keys()]
    .sort((a, b) => a - b)
    .map((step) => ({ step, pathInRepo: checkpointPath(step), entries: bySteps.get(step) ?? [] }));
  const finalEntries = await store.list({ prefix: FINAL_PATH });
  if (finalEntries.length > 0) folders.push({ step: null, pathInRepo: FINAL_PATH, entries: finalEntries });
  const manifests = folders.map((f) => `${f.pathInRepo}/${MANIFEST_NAME}`);
  const times = new Map(
    (await store.stat({ paths: manifests, times: true })).map((e) => [e.path, e.modifiedAt ?? null] as const),
  );
  const checkpoints = folders.map(({ step, pathInRepo, entries }): ListedCheckpoint => {
    const own = entries.filter((e) => e.path !== `${pathInRepo}/${MANIFEST_NAME}`);
    return {
      step,
      pathInRepo,
      fileCount: own.length,
      totalBytes: own.reduce((a, e) => a + e.sizeBytes, 0),
      pushedAt: times.get(`${pathInRepo}/${MANIFEST_NAME}`) ?? null,
    };
  });
  return { exists: true, checkpoints };
}
