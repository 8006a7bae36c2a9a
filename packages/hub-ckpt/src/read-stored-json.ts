// Reading a small JSON file of a store (a trainer_state.json, a run record) without trusting it.
import type { CheckpointStore } from './types';

/** Options of {@link readStoredJson}. */
export interface ReadStoredJsonOptions {
  store: CheckpointStore;
  /** The file's path in the repo, e.g. `ckpt/checkpoint-120/trainer_state.json`. */
  path: string;
}

/**
 * The parsed JSON of one stored file, or null when it is missing, cannot be read or is not JSON: for
 * files that only add detail to a report (a loss curve, what changed in a run), where a missing or broken
 * file means "no detail", never a failure.
 */
export async function readStoredJson(opts: ReadStoredJsonOptions): Promise<unknown> {
  try {
    const raw = await opts.store.readFile({ path: opts.path });
    return raw === null ? null : (JSON.parse(new TextDecoder().decode(raw)) as unknown);
  } catch {
    return null;
  }
}
