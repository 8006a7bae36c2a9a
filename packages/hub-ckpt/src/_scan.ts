import { CKPT_PREFIX, stepOfPath } from './_layout';
import type { CheckpointStore, StoreEntry } from './types';

/** Every `ckpt/checkpoint-<n>/` folder with its files, from one recursive listing. */
export async function scanCheckpoints(store: CheckpointStore): Promise<Map<number, StoreEntry[]>> {
  const bySteps = new Map<number, StoreEntry[]>();
  for (const e of await store.list({ prefix: CKPT_PREFIX })) {
    const s = stepOfPath(e.path);
    if (s === null) continue;
    bySteps.set(s, [...(bySteps.get(s) ?? []), e]);
  }
  return bySteps;
}
