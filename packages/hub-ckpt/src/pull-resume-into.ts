// Where a run resumes, pulled into the folder the trainer will read, for any trainer.
import { existsSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { PullTargetExistsError } from './errors';
import { pullCheckpoint } from './pull-checkpoint';
import { asPullFailure } from './_pull-integrity';
import { pullResume, type PullResumeOptions, type PullResumeResult } from './pull-resume';

/** Options of {@link pullResumeInto}: those of `pullResume`, with the folder to fill instead of its parent. */
export interface PullResumeIntoOptions extends Omit<PullResumeOptions, 'dir' | 'overwrite'> {
  /**
   * The folder the checkpoint becomes (not its parent), resolved against the working directory; null pulls
   * into a temporary folder removed afterwards: a check that the checkpoint verifies AND pulls cleanly.
   */
  dest: string | null;
  /** Replace `dest` when it exists; else a {@link PullTargetExistsError} before anything is read. @default false */
  overwrite?: boolean;
  /**
   * A complete run (a terminal pointer of this run): pull its `final/` into `dest` too, checked against the
   * manifest the pointer names (a corrupt one: `PullIntegrityError`, or the file's `ChecksumError`).
   * @default false (a complete outcome leaves `dest` untouched)
   */
  pullFinal?: boolean;
}

/** What {@link pullResumeInto} did. */
export interface PullResumeIntoResult {
  outcome: PullResumeResult;
  /** `dest`, holding the checkpoint, when one was resumed (or with `pullFinal`, `final/` pulled) into it; else null. */
  dir: string | null;
}

/**
 * `pullResume` into `dest` itself: the checkpoint lands in a hidden sibling (`<dest>.soup-pull`) first and is
 * renamed into place only once every hash matched, so `dest` is never half a checkpoint; the sibling is
 * removed whatever happens. A fresh outcome leaves `dest` untouched, and so does a complete one unless `pullFinal`.
 */
export async function pullResumeInto(opts: PullResumeIntoOptions): Promise<PullResumeIntoResult> {
  const { dest, overwrite, pullFinal, ...rest } = opts;
  const target = dest === null ? null : resolve(dest);
  if (target !== null && existsSync(target) && overwrite !== true) throw new PullTargetExistsError(target);
  const parent = target === null ? mkdtempSync(join(tmpdir(), 'soup-resume-')) : `${target}.soup-pull`;
  try {
    rmSync(parent, { recursive: true, force: true });
    const outcome = await pullResume({ ...rest, dir: parent, overwrite: true });
    if (outcome.outcome === 'complete' && pullFinal === true && target !== null) {
      await pullCheckpoint({
        store: opts.store,
        pathInRepo: outcome.pathInRepo,
        dir: target,
        expectedManifestSha256: outcome.pointer.manifest_sha256,
        overwrite: true,
        ...(opts.signal ? { signal: opts.signal } : {}),
        ...(opts.onFile ? { onFile: opts.onFile } : {}),
      }).catch((err: unknown) => {
        throw asPullFailure(err); // fallback cannot help: a complete run has only its final/
      });
      return { outcome, dir: target };
    }
    if (outcome.outcome !== 'resume' || target === null) return { outcome, dir: null };
    if (existsSync(target)) rmSync(target, { recursive: true, force: true });
    renameSync(outcome.localDir, target);
    return { outcome, dir: target };
  } finally {
    rmSync(parent, { recursive: true, force: true });
  }
}
