// A run extended to a new horizon (or shortened): the change is written to soup_run.json, so the store says which
// steps were trained toward which horizon.
import type { CheckpointStore } from '@soup/hub-ckpt';
import { readRunRecord, writeRunRecord, type RunRecord, type SupervisedIdentity } from './run-identity';
import { readTrainerState } from './horizon';
import type { Tell } from './_tell';

/**
 * When the resumed checkpoint (`dir`, at `step`) was trained toward another horizon (its trainer_state.json's
 * `max_steps`) than this session's `horizon`, appends the change to the store's soup_run.json (made when the run
 * has none: `soup train` names its run itself) and says so. A change already recorded last is not recorded twice
 * (a session that ended before its first save resumes the same checkpoint). Returns the record as now stored, or
 * `record` unchanged.
 */
export async function recordHorizonChange(p: {
  store: CheckpointStore;
  runId: string;
  identity: SupervisedIdentity;
  record: RunRecord | null;
  horizon: number | null;
  dir: string;
  step: number;
  tell: Tell;
}): Promise<RunRecord | null> {
  const from = readTrainerState(p.dir).maxSteps;
  if (p.horizon === null || from === null || from === p.horizon) return p.record;
  const stored = p.record ?? (await readRunRecord(p.store));
  if (stored !== null && stored.run !== p.runId) return p.record; // another run's record: not ours to change
  const last = stored?.horizons?.at(-1);
  const verb = p.horizon > from ? 'extended' : 'shortened';
  p.tell.say(`run ${p.runId} ${verb}: horizon ${from} → ${p.horizon} from step ${p.step}`);
  if (last !== undefined && last.from === from && last.to === p.horizon && last.at_step === p.step) return stored;
  const next: RunRecord = {
    ...(stored ?? { format: 'soup-run/1', run: p.runId, identity: p.identity, accepted: [], batch_size: null }),
    horizons: [...(stored?.horizons ?? []), { from, to: p.horizon, at_step: p.step, at: new Date().toISOString() }],
  };
  await writeRunRecord(p.store, next);
  return next;
}
