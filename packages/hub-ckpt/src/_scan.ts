import { CKPT_PREFIX, checkpointPath, stepOfPath } from './_layout';
import type { CheckpointStore, Manifest, StoreEntry } from './types';
import { verifyCheckpoint } from './verify-checkpoint';

export interface VerifiedCandidate {
  step: number;
  pathInRepo: string;
  manifest: Manifest;
  manifestSha256: string;
}

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

/** The newest folder (by step, filtered) that verifies and belongs to `run`, or null. */
export async function newestVerified(p: {
  store: CheckpointStore;
  run: string;
  bySteps: Map<number, StoreEntry[]>;
  accept: (step: number) => boolean;
}): Promise<VerifiedCandidate | null> {
  const steps = [...p.bySteps.keys()].filter(p.accept).sort((a, b) => b - a);
  for (const step of steps) {
    const pathInRepo = checkpointPath(step);
    const v = await verifyCheckpoint({ store: p.store, pathInRepo, expectedRun: p.run, expectedStep: step, entries: p.bySteps.get(step) });
    if (v.ok && v.manifest && v.manifestSha256) return { step, pathInRepo, manifest: v.manifest, manifestSha256: v.manifestSha256 };
  }
  return null;
}
