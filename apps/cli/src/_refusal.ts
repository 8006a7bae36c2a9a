// Turns hub-ckpt's resume refusals into messages that say what changed and what to do.
import { CorruptCheckpointError, readStoredJson, StaleRunError, type CheckpointStore } from '@soup/hub-ckpt';
import { ResumeRefusedError } from './errors';
import type { RunIdentity } from '@soup/config';

const readJson = async (store: CheckpointStore, path: string): Promise<Record<string, unknown> | null> =>
  (await readStoredJson({ store, path })) as Record<string, unknown> | null;

const show = (v: unknown): string =>
  typeof v === 'string' && /^[0-9a-f]{64}$/.test(v) ? `${v.slice(0, 12)}…` : JSON.stringify(v);

/** The fields whose values differ, as `field old → new`. */
export function diffIdentity(before: RunIdentity, after: RunIdentity): string[] {
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])];
  return keys.filter((k) => before[k] !== after[k]).map((k) => `${k} ${show(before[k])} → ${show(after[k])}`);
}

/**
 * Rethrows a StaleRunError / CorruptCheckpointError as a ResumeRefusedError that explains itself; other errors pass
 * through.
 */
export async function explainRefusal(
  err: unknown,
  opts: {
    store: CheckpointStore;
    run: string;
    identity: RunIdentity | null;
    fallbackFlag: string;
    repoFlag: string;
    fallbackUsed?: boolean;
  },
): Promise<never> {
  if (err instanceof StaleRunError) {
    const pointer = await readJson(opts.store, 'latest.json');
    const where = typeof pointer?.path_in_repo === 'string' ? pointer.path_in_repo : null;
    const record = where ? await readJson(opts.store, `${where}/soup_run.json`) : null;
    const old = record?.identity as RunIdentity | undefined;
    const changes = old && opts.identity ? diffIdentity(old, opts.identity) : [];
    const what = changes.length > 0 ? `; changed: ${changes.join('; ')}` : '';
    throw new ResumeRefusedError(
      `resume refused as stale: ${opts.store.description} holds run ${err.pointerRun} (step ${err.pointerStep}` +
        `), not this run ${opts.run}${what}. ` +
        `A changed run needs its own checkpoints: pass a new ${opts.repoFlag}, or restore the old run to resume it.`,
      { cause: err },
    );
  }
  if (err instanceof CorruptCheckpointError) {
    // Suggest the fallback only when it was not already tried (it walked every checkpoint and none pulled cleanly).
    const next = opts.fallbackUsed
      ? `Every checkpoint of this run was tried; start a new run with a new ${opts.repoFlag}, or repair the store.`
      : `Use ${opts.fallbackFlag} to resume from the newest checkpoint that verifies and pulls cleanly instead.`;
    throw new ResumeRefusedError(
      `resume refused, corrupt checkpoint: ` +
        `${err.message.replace(/ Refusing to resume.*$| Resume with fallback.*$| Nothing was pulled;.*$/, '')} ` +
        `${next}`,
      {
        cause: err,
      },
    );
  }
  throw err;
}
