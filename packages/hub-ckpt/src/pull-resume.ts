import { join, resolve } from 'node:path';
import { assertStepAndRun } from './build-manifest';
import { ChecksumError, CorruptCheckpointError, StaleRunError, StoreError, UnsafePathError } from './errors';
import { sha256Hex } from './_fs';
import { checkpointPath, POINTER_PATH } from './_layout';
import { makePointer, pointerBytes, readPointer } from './_pointer';
import { resumeCandidates, type ResumeCandidate } from './_resume-order';
import { scanCheckpoints } from './_scan';
import { pullCheckpoint, type PullCheckpointOptions, type PullResult } from './pull-checkpoint';
import type { CheckpointStore, HubCkptLogger, Pointer } from './types';
import { verifyCheckpoint } from './verify-checkpoint';

export interface PullResumeOptions {
  store: CheckpointStore;
  /** Fingerprint of the run asking to resume. */
  run: string;
  /** Local parent folder; the checkpoint lands in `<dir>/checkpoint-<step>`. */
  dir: string;
  /**
   * When the chosen checkpoint fails to pull (hash mismatch, missing file) or to verify, walk back to the
   * next older checkpoint of this run that verifies AND pulls cleanly. @default true
   */
  fallback?: boolean;
  /** Rewrite latest.json to the checkpoint actually resumed from (only when it differs). @default false */
  repair?: boolean;
  /** Replace an existing local `<dir>/checkpoint-<step>`. @default false */
  overwrite?: boolean;
  /** Aborts between files and requests; nothing half-written is left. @default none */
  signal?: AbortSignal;
  /** @default silent */
  logger?: HubCkptLogger;
  /** Called after each pulled file is checked. @default none */
  onFile?: PullCheckpointOptions['onFile'];
  /**
   * A run extended to a new horizon: a terminal pointer at a step below this one no longer means "complete". The
   * newest checkpoint of the run at or below the terminal step that verifies and pulls is resumed (`via:
   * 'reopened'`), and with `repair` latest.json points at it again, not terminal. @default none
   */
  reopenBelow?: number;
}

/** One checkpoint passed over, and why. */
export interface SkippedCheckpoint {
  step: number;
  pathInRepo: string;
  problems: string[];
}

export type PullResumeResult =
  | {
      outcome: 'fresh';
      /** `repo-missing`: nothing there yet; `no-checkpoint`: no pointer and no verified checkpoint of this run. */
      reason: 'repo-missing' | 'no-checkpoint';
    }
  | { outcome: 'complete'; step: number; pathInRepo: string; pointer: Pointer }
  | {
      outcome: 'resume';
      step: number;
      pathInRepo: string;
      /** `<dir>/checkpoint-<step>`, every file hash-checked. */
      localDir: string;
      pulled: PullResult;
      /**
       * Why this is not simply the pointed checkpoint: `newer-verified` (a crash between verify and pointer
       * left a newer verified checkpoint), `fallback` (the pointed one did not verify or pull), `no-pointer`
       * (checkpoints but no latest.json), `reopened` (a terminal pointer below `reopenBelow`); null when it is the
       * pointed one.
       */
      via: 'newer-verified' | 'fallback' | 'no-pointer' | 'reopened' | null;
      /** Step latest.json named, when `via` is set and there was a valid pointer. */
      previousStep: number | null;
      /** Whether latest.json was rewritten (only with `repair`). */
      repaired: boolean;
      /** Checkpoints tried and passed over, newest first. */
      skipped: SkippedCheckpoint[];
    };

/**
 * Errors that mean "this checkpoint's data is bad" (try an older one), as opposed to "the store or the caller failed".
 */
function dataProblems(err: unknown): string[] | null {
  if (err instanceof ChecksumError) return [err.message];
  if (err instanceof CorruptCheckpointError) return err.problems.length > 0 ? err.problems : [err.message];
  if (err instanceof UnsafePathError) return [err.message];
  if (err instanceof StoreError) {
    const code = (err.cause as NodeJS.ErrnoException | undefined)?.code;
    if (err.status === 404 || code === 'ENOENT') return [`a file is missing: ${err.message}`];
  }
  return null;
}

function listSkipped(skipped: SkippedCheckpoint[]): string {
  return skipped
    .map(
      (s) =>
        `${s.pathInRepo}: ${s.problems.slice(0, 3).join('; ')}` +
        `${s.problems.length > 3 ? ` (and ${s.problems.length - 3} more)` : ''}`,
    )
    .join(' | ');
}

/**
 * Where a session resumes, pulled: picks the pointed checkpoint (or a newer verified one), verifies it,
 * pulls it into `<dir>/checkpoint-<step>` through `.incomplete` with every hash checked, and — with
 * `fallback` — walks back to the next older checkpoint of this run when one fails to verify or to pull.
 * Throws StaleRunError for another run's pointer and CorruptCheckpointError (naming every skipped
 * checkpoint and why) when nothing pulls cleanly. latest.json is rewritten only with `repair`.
 */
export async function pullResume(opts: PullResumeOptions): Promise<PullResumeResult> {
  const { store, run, signal } = opts;
  assertStepAndRun(0, run);
  const fallback = opts.fallback ?? true;
  const repair = opts.repair ?? false;
  const log = (line: string): void => opts.logger?.info?.(line);
  const parent = resolve(opts.dir);
  signal?.throwIfAborted();

  if (!(await store.exists())) return { outcome: 'fresh', reason: 'repo-missing' };
  const current = await readPointer(store);
  const pointer = current.pointer;
  if (pointer && pointer.run !== run)
    throw new StaleRunError({ pointerRun: pointer.run, run, pointerStep: pointer.step, where: store.description });
  const reopen = pointer?.terminal === true && opts.reopenBelow !== undefined && pointer.step < opts.reopenBelow;
  if (pointer?.terminal && !reopen)
    return { outcome: 'complete', step: pointer.step, pathInRepo: pointer.path_in_repo, pointer };
  if (current.raw !== null && pointer === null && !fallback) {
    throw new CorruptCheckpointError(
      `${store.description}: latest.json is invalid (${current.errors.join('; ')}). Resume with fallback to use ` +
        `the newest checkpoint that verifies and pulls.`,
      { pathInRepo: POINTER_PATH, problems: current.errors },
    );
  }
  signal?.throwIfAborted();
  const bySteps = await scanCheckpoints(store);
  const steps = [...bySteps.keys()].sort((a, b) => b - a);

  const candidates: Array<Omit<ResumeCandidate, 'via'> & { via: ResumeCandidate['via'] | 'reopened' }> =
    reopen && pointer
      ? steps.filter((step) => step <= pointer.step).map((step) => ({ step, via: 'reopened' as const }))
      : resumeCandidates({ hasPointerFile: current.raw !== null, pointer, steps, fallback });

  const skipped: SkippedCheckpoint[] = [];
  let anyVerified = false;
  let lastPullError: unknown;
  for (const c of candidates) {
    signal?.throwIfAborted();
    const pathInRepo = checkpointPath(c.step);
    const v = await verifyCheckpoint({
      store,
      pathInRepo,
      expectedRun: run,
      expectedStep: c.step,
      entries: bySteps.get(c.step) ?? [],
      ...(c.expectedManifestSha256 !== undefined ? { expectedManifestSha256: c.expectedManifestSha256 } : {}),
      ...(signal ? { signal } : {}),
    });
    if (!v.ok || v.manifestSha256 === null) {
      skipped.push({ step: c.step, pathInRepo, problems: v.problems });
      if (c.via !== 'newer-verified')
        log(`${store.description}: ${pathInRepo} does not verify (${v.problems.slice(0, 2).join('; ')}), skipping it`);
      continue;
    }
    anyVerified = true;
    const localDir = join(parent, `checkpoint-${c.step}`);
    let pulled: PullResult;
    try {
      pulled = await pullCheckpoint({
        store,
        pathInRepo,
        dir: localDir,
        expectedManifestSha256: v.manifestSha256,
        overwrite: opts.overwrite ?? false,
        ...(signal ? { signal } : {}),
        ...(opts.onFile ? { onFile: opts.onFile } : {}),
      });
    } catch (err) {
      const problems = dataProblems(err);
      if (problems === null) throw err;
      lastPullError = err;
      skipped.push({ step: c.step, pathInRepo, problems });
      log(`${store.description}: ${pathInRepo} verified but failed to pull (${problems[0] ?? ''}), skipping it`);
      continue;
    }
    const via = c.via;
    let repaired = false;
    if (repair && via !== null) {
      const next = makePointer({ step: c.step, pathInRepo, run, terminal: false, manifestSha256: v.manifestSha256 });
      await store.commit({
        message: `soup: repair latest.json -> ${pathInRepo} (step ${c.step}, ${via})`,
        operations: [{ kind: 'put', path: POINTER_PATH, bytes: pointerBytes(next) }],
        ifMatch: { path: POINTER_PATH, sha256: current.raw === null ? null : sha256Hex(current.raw) },
        ...(signal ? { signal } : {}),
      });
      repaired = true;
      log(`${store.description}: latest.json repaired to ${pathInRepo} (${via})`);
    }
    return {
      outcome: 'resume',
      step: c.step,
      pathInRepo,
      localDir: pulled.dir,
      pulled,
      via,
      previousStep: via !== null && pointer ? pointer.step : null,
      repaired,
      skipped,
    };
  }

  if (current.raw === null && !anyVerified) return { outcome: 'fresh', reason: 'no-checkpoint' };
  const pointedSkipped = pointer !== null && skipped.some((s) => s.step === pointer.step);
  const where =
    pointer === null
      ? current.raw === null
        ? 'no checkpoint of this run verifies and pulls cleanly'
        : `latest.json is invalid (${current.errors.join('; ')}) and no checkpoint of this run verifies and pulls ` +
          `cleanly`
      : pointer.path_in_repo !== checkpointPath(pointer.step)
        ? `latest.json names ${pointer.path_in_repo}, which is not a checkpoint folder`
        : fallback
          ? `latest.json names ${pointer.path_in_repo} (step ${pointer.step}) and no checkpoint of this run ` +
            `verifies and pulls cleanly`
          : `latest.json names ${pointer.path_in_repo} (step ${pointer.step}), which ` +
            `${pointedSkipped ? 'does not verify or pull cleanly' : 'is missing'}`;
  const problems = skipped.flatMap((s) => s.problems.map((p) => `${s.pathInRepo}: ${p}`));
  throw new CorruptCheckpointError(
    `${store.description}: ${where}. Skipped: ${skipped.length > 0 ? listSkipped(skipped) : 'none'}. ` +
      (fallback
        ? 'Nothing was pulled; push a new checkpoint or start a new run.'
        : 'Refusing to resume from it; resume with fallback to walk back to the newest checkpoint that pulls cleanly.'),
    {
      pathInRepo: pointer?.path_in_repo ?? POINTER_PATH,
      problems: problems.length > 0 ? problems : [where],
      cause: lastPullError,
    },
  );
}
