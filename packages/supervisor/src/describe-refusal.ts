// What a resume refusal means for the user: a store that holds another run (what changed between the two
// identities, and what to do), or a corrupt checkpoint (whether a fallback is still worth trying).
import { CorruptCheckpointError, readStoredJson, StaleRunError, type CheckpointStore } from '@soup/hub-ckpt';

/** Options of {@link describeRefusal}. */
export interface DescribeRefusalOptions {
  store: CheckpointStore;
  /** This run's id. */
  run: string;
  /** This run's identity, compared field by field with the one the store's newest checkpoint records. */
  identity: Record<string, unknown> | null;
  /** The flag (or value) that resumes from the newest checkpoint that pulls cleanly, e.g. `--resume auto`. */
  fallbackFlag: string;
  /** The flag that names the store, e.g. `--repo`. */
  repoFlag: string;
  /** The fallback was already tried (it walked every checkpoint and none pulled cleanly). */
  fallbackUsed?: boolean;
}

const readJson = async (store: CheckpointStore, path: string): Promise<Record<string, unknown> | null> =>
  (await readStoredJson({ store, path })) as Record<string, unknown> | null;

const show = (v: unknown): string =>
  typeof v === 'string' && /^[0-9a-f]{64}$/.test(v) ? `${v.slice(0, 12)}…` : JSON.stringify(v);

/** The fields whose values differ, as `field old → new`. */
export function diffIdentity(before: Record<string, unknown>, after: Record<string, unknown>): string[] {
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])];
  return keys.filter((k) => before[k] !== after[k]).map((k) => `${k} ${show(before[k])} → ${show(after[k])}`);
}

/** `training.steps` before and after, when the two identities differ there. */
function stepsChange(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
): { from: number; to: number } | null {
  const [from, to] = [before['training.steps'], after['training.steps']];
  return typeof from === 'number' && typeof to === 'number' && from !== to ? { from, to } : null;
}

/**
 * The message that explains a StaleRunError / CorruptCheckpointError (what changed, what to do); null for any other
 * error, which the caller rethrows as it is.
 */
export async function describeRefusal(err: unknown, opts: DescribeRefusalOptions): Promise<string | null> {
  if (err instanceof StaleRunError) {
    const pointer = await readJson(opts.store, 'latest.json');
    const where = typeof pointer?.path_in_repo === 'string' ? pointer.path_in_repo : null;
    const record = where ? await readJson(opts.store, `${where}/soup_run.json`) : null;
    const old = record?.identity as Record<string, unknown> | undefined;
    const changes = old && opts.identity ? diffIdentity(old, opts.identity) : [];
    const what = changes.length > 0 ? `; changed: ${changes.join('; ')}` : '';
    // Only the horizon changed (soup train's identity): the old run can be continued to it on its own schedule.
    const steps = old && opts.identity && changes.length === 1 ? stepsChange(old, opts.identity) : null;
    const extend = steps
      ? ` To continue that run to ${steps.to} steps on its own schedule instead, keep training.steps: ${steps.from} ` +
        `and pass --extend-to ${steps.to} (or set training.schedule_steps: ${steps.from}).`
      : '';
    return (
      `resume refused as stale: ${opts.store.description} holds run ${err.pointerRun} (step ${err.pointerStep}` +
      `), not this run ${opts.run}${what}. ` +
      `A changed run needs its own checkpoints: pass a new ${opts.repoFlag}, or restore the old run to resume it.` +
      extend
    );
  }
  if (err instanceof CorruptCheckpointError) {
    // Suggest the fallback only when it was not already tried.
    const next = opts.fallbackUsed
      ? `Every checkpoint of this run was tried; start a new run with a new ${opts.repoFlag}, or repair the store.`
      : `Use ${opts.fallbackFlag} to resume from the newest checkpoint that verifies and pulls cleanly instead.`;
    return (
      `resume refused, corrupt checkpoint: ` +
      `${err.message.replace(/ Refusing to resume.*$| Resume with fallback.*$| Nothing was pulled;.*$/, '')} ` +
      `${next}`
    );
  }
  return null;
}
