// The stale guard: which run this session continues, judged from the store's run record (soup_run.json).
import type { CheckpointStore } from '@soup/hub-ckpt';
import { StaleRecordError, SupervisorUsageError } from './errors';
import {
  describeIdentityChange,
  readRunRecord,
  writeRunRecord,
  type RunRecord,
  type SupervisedIdentity,
} from './run-identity';
import type { SessionOptions } from './supervise-options';
import type { Tell } from './_tell';

/** The run this session continues, and its record (null: none yet, or the caller names the run). */
export interface ClaimedRun {
  record: RunRecord | null;
  runId: string;
}

/**
 * Claims the store for `fingerprint`: refuses `--resume never` on a store with checkpoints and a store holding
 * another run's checkpoints (unless `--resume force`, which records this command as accepted for that run).
 */
export async function claimRun(p: {
  store: CheckpointStore;
  storeName: string;
  fingerprint: string;
  identity: SupervisedIdentity;
  ownRecord: boolean;
  resume: SessionOptions['resume'];
  tell: Tell;
}): Promise<ClaimedRun> {
  const { store, storeName, fingerprint, identity } = p;
  const { say, warn } = p.tell;
  const force = p.resume === 'force';
  let record = p.ownRecord ? await readRunRecord(store) : null;
  let runId = fingerprint;
  if (
    p.resume === 'never' &&
    ((await store.readFile({ path: 'latest.json' })) !== null || (await store.list({ prefix: 'ckpt' })).length > 0)
  ) {
    throw new SupervisorUsageError(
      `${storeName} already holds checkpoints; --resume never would overwrite them: pass another --repo, or ` +
        `--resume auto`,
      { field: 'resume' },
    );
  }
  if (record !== null) {
    // The same identity under another fingerprint: a record an older soup wrote before it redacted that key.
    const same = describeIdentityChange(record.identity, identity).length === 0;
    if (record.run === fingerprint || record.accepted.includes(fingerprint) || same) {
      runId = record.run;
      if (same && record.run !== fingerprint && !record.accepted.includes(fingerprint)) {
        // Rewritten at once, so the key an older soup stored in plain text leaves the store.
        record = { ...record, identity };
        await writeRunRecord(store, record);
      }
    } else if (
      (await store.readFile({ path: 'latest.json' })) === null &&
      (await store.list({ prefix: 'ckpt' })).length === 0
    ) {
      say(
        `${storeName} holds no checkpoint of run ${record.run} (` +
          `${describeIdentityChange(record.identity, identity).join('; ') || 'another command'}): starting run ` +
          `${fingerprint} there`,
      );
      record = null;
    } else {
      const changes = describeIdentityChange(record.identity, identity);
      const what = changes.length > 0 ? changes.join('; ') : 'the fingerprint differs';
      if (!force) {
        throw new StaleRecordError(
          `resume refused as stale: ${storeName} holds run ${record.run}, not this command's ${fingerprint}: ` +
            `${what}. ` +
            'A changed run needs its own checkpoints: pass a new --repo, restore the old command, or pass ' +
            '--resume force to continue that run anyway.',
        );
      }
      warn(
        `--resume force: continuing run ${record.run} although ${what}; this command is now accepted as the same run`,
      );
      record = { ...record, accepted: [...record.accepted, fingerprint], identity };
      await writeRunRecord(store, record);
      runId = record.run;
    }
  }
  return { record, runId };
}
