import { checkpointPath, FINAL_PATH, MANIFEST_NAME, POINTER_PATH } from './_layout';
import { LEASE_PATH, type LeaseInfo, parseLease } from './_lease-wait';
import { readPointer } from './_pointer';
import { scanCheckpoints } from './_scan';
import type { CheckpointStore, Pointer } from './types';
import { verifyCheckpoint } from './verify-checkpoint';

export interface CheckpointStatusOptions {
  store: CheckpointStore;
  /** Run fingerprint to compare with the pointer's. @default not compared */
  run?: string;
  /** Verify the pointed checkpoint (and every listed one when `"all"`). @default false */
  verify?: boolean | 'all';
}

export interface CheckpointStatusEntry {
  step: number;
  pathInRepo: string;
  /** Files of the checkpoint, manifest.json not counted (as a push counts them). */
  fileCount: number;
  /** Their bytes, manifest.json not counted. */
  totalBytes: number;
  /** Whether manifest.json is present. */
  hasManifest: boolean;
  /** Verification result, when asked for. */
  verified?: boolean;
  problems?: string[];
}

export interface CheckpointStatus {
  /** The store, described without secrets. */
  store: string;
  exists: boolean;
  /** The valid pointer, or null (missing or invalid). */
  pointer: Pointer | null;
  /** Why latest.json is invalid (empty when valid or missing). */
  pointerErrors: string[];
  /** Whether latest.json exists at all. */
  hasPointer: boolean;
  /** Pointer run equals `run`; null when no run was given or no valid pointer. */
  runMatches: boolean | null;
  /** Remote `ckpt/` folders, ascending by step. */
  checkpoints: CheckpointStatusEntry[];
  /** Whether `final/manifest.json` exists. */
  hasFinal: boolean;
  /** Bytes of the files in the tree now (every listed checkpoint, final/ and latest.json excluded). */
  treeBytes: number;
  /**
   * Bytes the store holds for the repo, history included, where it reports them (the Hub's usedStorage);
   * null when it does not. On the Hub this exceeds `treeBytes` by what pruned commits still reach.
   */
  storedBytes: number | null;
  /** Verification of the pointed checkpoint, when `verify` was set and a pointer exists. */
  pointed?: { verified: boolean; problems: string[] };
  /** The store's lease as `soup-lease.json` says (its id is what `--take-over-lease` takes), or null when none. */
  lease: LeaseInfo | null;
}

/**
 * A read-only summary of a checkpoint repo (for `soup ckpt status`): pointer, folders, final, optional verification.
 */
export async function checkpointStatus(opts: CheckpointStatusOptions): Promise<CheckpointStatus> {
  const { store } = opts;
  const base = {
    store: store.description,
    pointer: null,
    pointerErrors: [],
    hasPointer: false,
    runMatches: null,
    checkpoints: [],
    hasFinal: false,
    treeBytes: 0,
    storedBytes: null,
    lease: null,
  };
  if (!(await store.exists())) return { ...base, exists: false };
  const present = new Set(
    (await store.stat({ paths: [POINTER_PATH, `${FINAL_PATH}/${MANIFEST_NAME}`, LEASE_PATH] })).map((e) => e.path),
  );
  const ptr = present.has(POINTER_PATH) ? await readPointer(store) : { raw: null, pointer: null, errors: [] };
  const bySteps = await scanCheckpoints(store);
  const checkpoints: CheckpointStatusEntry[] = [];
  let treeBytes = 0;
  for (const step of [...bySteps.keys()].sort((a, b) => a - b)) {
    const entries = bySteps.get(step) ?? [];
    const pathInRepo = checkpointPath(step);
    treeBytes += entries.reduce((a, e) => a + e.sizeBytes, 0);
    // Files and bytes counted as a push counts them: the checkpoint's own files, manifest.json aside.
    const own = entries.filter((e) => e.path !== `${pathInRepo}/${MANIFEST_NAME}`);
    const entry: CheckpointStatusEntry = {
      step,
      pathInRepo,
      fileCount: own.length,
      totalBytes: own.reduce((a, e) => a + e.sizeBytes, 0),
      hasManifest: own.length < entries.length,
    };
    if (opts.verify === 'all') {
      const v = await verifyCheckpoint({ store, pathInRepo, expectedStep: step, entries });
      entry.verified = v.ok;
      entry.problems = v.problems;
    }
    checkpoints.push(entry);
  }
  const status: CheckpointStatus = {
    ...base,
    exists: true,
    pointer: ptr.pointer,
    pointerErrors: ptr.errors,
    hasPointer: ptr.raw !== null,
    runMatches: opts.run === undefined || ptr.pointer === null ? null : ptr.pointer.run === opts.run,
    checkpoints,
    hasFinal: present.has(`${FINAL_PATH}/${MANIFEST_NAME}`),
    treeBytes,
    storedBytes: store.usedStorageBytes ? await store.usedStorageBytes() : null,
    lease: present.has(LEASE_PATH) ? parseLease(await store.readFile({ path: LEASE_PATH })) : null,
  };
  if (opts.verify && ptr.pointer) {
    const v = await verifyCheckpoint({
      store,
      pathInRepo: ptr.pointer.path_in_repo,
      expectedManifestSha256: ptr.pointer.manifest_sha256,
      expectedRun: ptr.pointer.run,
      expectedStep: ptr.pointer.step,
    });
    status.pointed = { verified: v.ok, problems: v.problems };
  }
  return status;
}
