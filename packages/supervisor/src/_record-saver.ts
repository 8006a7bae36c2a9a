// Writing the run record (soup_run.json) of a session: the run, its identity, its batch and its sessions.
import type { CheckpointStore } from '@soup/hub-ckpt';
import { writeRunRecord, type RunRecord, type SupervisedIdentity, type SupervisedSession } from './run-identity';

/** The run record as this session knows it; `save` writes it with this session's entry (when it has one). */
export interface RecordSaver {
  readonly record: RunRecord | null;
  save(): Promise<void>;
}

/**
 * Keeps the run record of `runId` (from `record`, null: none yet); `save` is a no-op when the caller names the run
 * (`ownRecord` false). With a global batch G the record lists every session, this one (`session`) last.
 */
export function recordSaver(p: {
  store: CheckpointStore;
  ownRecord: boolean;
  runId: string;
  identity: SupervisedIdentity;
  record: RunRecord | null;
  G: number | null;
  batchSize: number | null;
  session: SupervisedSession | null;
}): RecordSaver {
  const { G, session } = p;
  let record = p.record;
  const sessions = (): Record<string, unknown> =>
    session === null ? {} : { global_batch_size: G, sessions: [...(record?.sessions ?? []), session] };
  return {
    get record() {
      return record;
    },
    async save() {
      if (!p.ownRecord) return;
      const next: RunRecord = {
        format: 'soup-run/1',
        run: p.runId,
        identity: p.identity,
        accepted: record?.accepted ?? [],
        batch_size: record?.batch_size ?? (G === null ? p.batchSize : null),
        ...sessions(),
        ...(record?.horizons ? { horizons: record.horizons } : {}),
      };
      await writeRunRecord(p.store, next);
      record = { ...next, sessions: record?.sessions ?? [] };
    },
  };
}
