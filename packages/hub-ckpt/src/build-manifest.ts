import { stat } from 'node:fs/promises';
import { InvalidCheckpointOptionError } from './errors';
import { isDirectory, sha256Hex, TMP_PREFIX, walkFiles } from './_fs';
import { type FileHash, hashFileMemo } from './_hash-memo';
import { MANIFEST_NAME, stepOfLocalName } from './_layout';
import { assertSafeName } from './_paths';
import type { Manifest } from './types';

export interface BuildManifestOptions {
  /** Local checkpoint folder. A top-level `manifest.json` in it is ignored (it is rebuilt). */
  dir: string;
  step: number;
  /** Run fingerprint. */
  run: string;
  /**
   * Leave out top-level `checkpoint-<n>` folders: a final model pushed from the trainer's output folder holds
   * the model files, not the checkpoints saved beside them. @default false
   */
  skipCheckpointFolders?: boolean;
  /** Hashes a file as `hashFile` does (a store's `openStaging().hash` copies it in on the way). @default memoized */
  hashFile?: (path: string, gitBlobSizeBytes?: number) => Promise<FileHash>;
}

/** Files at least this large are LFS on the Hub (listed by sha256): no git blob id is computed for them. */
export const GIT_BLOB_MAX_BYTES = 10 * 1024 * 1024;

export interface BuiltManifest {
  manifest: Manifest;
  /** The exact `manifest.json` bytes to upload. */
  bytes: Uint8Array;
  /** sha256 of `bytes` (what `latest.json` records as `manifest_sha256`). */
  sha256: string;
  /**
   * Files of the folder, in manifest order, with their local paths; `gitSha1` (git blob id) for files under
   * GIT_BLOB_MAX_BYTES, which a Hub lists by that id, so a push verifies them without downloading.
   */
  files: Array<{ name: string; localPath: string; sizeBytes: number; sha256: string; gitSha1?: string }>;
  /** Sum of the files' sizes. */
  totalBytes: number;
}

/** Hashes every file of a local checkpoint folder into a manifest (deterministic bytes: same folder, same sha). */
export async function buildManifest(opts: BuildManifestOptions): Promise<BuiltManifest> {
  assertStepAndRun(opts.step, opts.run);
  if (typeof opts.dir !== 'string' || !(await isDirectory(opts.dir))) {
    throw new InvalidCheckpointOptionError(
      `dir ${JSON.stringify(opts.dir)} is not a directory: pass the local checkpoint folder to push.`,
      { field: 'dir' },
    );
  }
  // Links resolving outside the folder, loops and dangling links are refused here, before anything is read or uploaded.
  const walked = (await walkFiles(opts.dir, (name) => isLeftOut(name, opts.skipCheckpointFolders === true))).filter(
    (f) => f.name !== MANIFEST_NAME,
  );
  if (walked.length === 0) {
    throw new InvalidCheckpointOptionError(`dir ${opts.dir} holds no files: nothing to push.`, { field: 'dir' });
  }
  const files: BuiltManifest['files'] = new Array(walked.length);
  const hashOne = async (i: number): Promise<void> => {
    const { name, realPath: localPath } = walked[i] as (typeof walked)[number];
    assertSafeName(name);
    const before = (await stat(localPath)).size;
    const { sha256, sizeBytes, gitSha1 } = await (opts.hashFile ?? hashFileMemo)(
      localPath,
      before < GIT_BLOB_MAX_BYTES ? before : undefined,
    );
    if (sizeBytes !== before) {
      throw new InvalidCheckpointOptionError(
        `${localPath} changed size while being hashed: push a checkpoint only once the trainer finished writing it.`,
        { field: 'dir' },
      );
    }
    files[i] = { name, localPath, sizeBytes, sha256, ...(gitSha1 === undefined ? {} : { gitSha1 }) };
  };
  // Two files at once when each hash also copies (a store's staging): one per copy worker, each hashed on a core of
  // its own while the kernel copies. Every file in hand is finished before an error is thrown.
  let next = 0;
  let failed: { err: unknown } | undefined;
  const lane = async (): Promise<void> => {
    while (failed === undefined && next < walked.length) {
      await hashOne(next++).catch((err: unknown) => {
        failed ??= { err };
      });
    }
  };
  await Promise.all(Array.from({ length: opts.hashFile === undefined ? 1 : 2 }, lane));
  if (failed !== undefined) throw failed.err;
  const manifest: Manifest = {
    step: opts.step,
    run: opts.run,
    files: Object.fromEntries(files.map((f) => [f.name, { size: f.sizeBytes, sha256: f.sha256 }])),
  };
  const bytes = new TextEncoder().encode(`${JSON.stringify(manifest, null, 2)}\n`);
  return { manifest, bytes, sha256: sha256Hex(bytes), files, totalBytes: files.reduce((a, f) => a + f.sizeBytes, 0) };
}

/**
 * soup's own bookkeeping (`.soup-verified.json`, `.soup-run.lock`, staging folders: every name starting `.soup-`)
 * is never part of a checkpoint: a directory store never lists such names, so it could not verify.
 */
function isLeftOut(name: string, skipCheckpointFolders: boolean): boolean {
  const base = name.slice(name.lastIndexOf('/') + 1);
  if (base.startsWith(TMP_PREFIX)) return true;
  return skipCheckpointFolders && !name.includes('/') && stepOfLocalName(name) !== null;
}

export function assertStepAndRun(step: unknown, run: unknown): void {
  if (typeof step !== 'number' || !Number.isInteger(step) || step < 0) {
    throw new InvalidCheckpointOptionError(`step must be a non-negative integer, got ${JSON.stringify(step)}.`, {
      field: 'step',
    });
  }
  if (typeof run !== 'string' || run.length === 0 || run.length > 512) {
    throw new InvalidCheckpointOptionError(
      'run must be a non-empty run fingerprint (at most 512 characters), the same in every session of the run.',
      { field: 'run' },
    );
  }
}
