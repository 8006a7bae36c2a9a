// The results of push, pull, status, list and resume as flat snake_case records: what `soup ckpt --json` prints,
// what the `RESUME_JSON` line carries to a trainer, and what any other tool can write or parse alike.
import type { CheckpointStatus } from './checkpoint-status';
import type { CheckpointList } from './list-checkpoints';
import type { PullResult } from './pull-checkpoint';
import type { PullResumeResult } from './pull-resume';
import type { PushResult } from './push-checkpoint';
import type { Pointer } from './types';

/** {@link pushRecord}'s record of one push. */
export interface PushRecord {
  step: number;
  path_in_repo: string;
  manifest_sha256: string;
  files: number;
  bytes: number;
  commits: number;
  pruned_remote: string[];
  pruned_local: string[];
  /** The push's wall time, rounded to a millisecond. */
  ms: number;
}

/** A push (checkpoint or final) as a record. */
export function pushRecord(r: PushResult): PushRecord {
  return {
    step: r.step,
    path_in_repo: r.pathInRepo,
    manifest_sha256: r.manifestSha256,
    files: r.fileCount,
    bytes: r.totalBytes,
    commits: r.commits,
    pruned_remote: r.prunedRemote,
    pruned_local: r.prunedLocal,
    ms: Math.round(r.timings.totalMs),
  };
}

/** {@link pullRecord}'s record of one pull. */
export interface PullRecord {
  path_in_repo: string;
  /** The local folder holding the checkpoint. */
  dir: string;
  step: number;
  files: number;
  bytes: number;
  manifest_sha256: string;
}

/** A pull of `pathInRepo` into `dir` as a record. */
export function pullRecord(pathInRepo: string, r: PullResult, dir: string = r.dir): PullRecord {
  return {
    path_in_repo: pathInRepo,
    dir,
    step: r.step,
    files: r.fileCount,
    bytes: r.totalBytes,
    manifest_sha256: r.manifestSha256,
  };
}

/** {@link statusRecord}'s record of a store. */
export interface StatusRecord {
  store: string;
  exists: boolean;
  pointer: Pointer | null;
  pointer_errors: string[];
  /** Whether the pointed checkpoint verified; null when it was not verified (or nothing is pointed). */
  pointed_verified: boolean | null;
  pointed_problems: string[];
  checkpoints: { step: number; path_in_repo: string; files: number; bytes: number; has_manifest: boolean }[];
  has_final: boolean;
  tree_bytes: number;
  stored_bytes: number | null;
  /** The store's lease (`id` is what `--take-over-lease` takes), or null when none. */
  lease: { id: string; host: string; pid: number; run: string; since: string; expires_at: string } | null;
}

/** A {@link CheckpointStatus} as a record. */
export function statusRecord(st: CheckpointStatus): StatusRecord {
  return {
    store: st.store,
    exists: st.exists,
    pointer: st.pointer,
    pointer_errors: st.pointerErrors,
    pointed_verified: st.pointed?.verified ?? null,
    pointed_problems: st.pointed?.problems ?? [],
    checkpoints: st.checkpoints.map((c) => ({
      step: c.step,
      path_in_repo: c.pathInRepo,
      files: c.fileCount,
      bytes: c.totalBytes,
      has_manifest: c.hasManifest,
    })),
    has_final: st.hasFinal,
    tree_bytes: st.treeBytes,
    stored_bytes: st.storedBytes,
    lease:
      st.lease === null
        ? null
        : {
            id: st.lease.id,
            host: st.lease.host,
            pid: st.lease.pid,
            run: st.lease.run,
            since: st.lease.since,
            expires_at: st.lease.expires_at,
          },
  };
}

/**
 * {@link resumeRecord}'s record: where a run resumes. A trainer reads `step` and `dir` (null: start from step 0,
 * or nothing was pulled); `outcome` is `fresh`, `complete` or `resume`.
 */
export type ResumeRecord =
  | { outcome: 'fresh'; reason: 'repo-missing' | 'no-checkpoint'; step: 0; path_in_repo: null; dir: null }
  | { outcome: 'complete'; step: number; path_in_repo: string; dir: string | null }
  | {
      outcome: 'resume';
      step: number;
      path_in_repo: string;
      dir: string | null;
      via: 'newer-verified' | 'fallback' | 'no-pointer' | 'reopened' | null;
      previous_step: number | null;
      repaired: boolean;
      skipped: { step: number; path_in_repo: string; problems: string[] }[];
    };

/** A `pullResume` outcome as a record; `dir` is where the checkpoint was pulled to, if it was kept. */
export function resumeRecord(outcome: PullResumeResult, dir: string | null): ResumeRecord {
  if (outcome.outcome === 'fresh')
    return { outcome: 'fresh', reason: outcome.reason, step: 0, path_in_repo: null, dir: null };
  if (outcome.outcome === 'complete')
    return { outcome: 'complete', step: outcome.step, path_in_repo: outcome.pathInRepo, dir };
  return {
    outcome: 'resume',
    step: outcome.step,
    path_in_repo: outcome.pathInRepo,
    dir,
    via: outcome.via,
    previous_step: outcome.previousStep,
    repaired: outcome.repaired,
    skipped: outcome.skipped.map((k) => ({ step: k.step, path_in_repo: k.pathInRepo, problems: k.problems })),
  };
}

/** {@link listRecord}'s record of a store's checkpoints. */
export interface ListRecord {
  store: string;
  exists: boolean;
  checkpoints: { step: number | null; path_in_repo: string; files: number; bytes: number; pushed_at: string | null }[];
}

/** A {@link CheckpointList} as a record (`store` is the store's description). */
export function listRecord(store: string, list: CheckpointList): ListRecord {
  return {
    store,
    exists: list.exists,
    checkpoints: list.checkpoints.map((c) => ({
      step: c.step,
      path_in_repo: c.pathInRepo,
      files: c.fileCount,
      bytes: c.totalBytes,
      pushed_at: c.pushedAt,
    })),
  };
}
