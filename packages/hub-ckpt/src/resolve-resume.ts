import { assertStepAndRun } from './build-manifest';
import { CorruptCheckpointError, StaleRunError } from './errors';
import { POINTER_PATH } from './_layout';
import { makePointer, pointerBytes, readPointer } from './_pointer';
import { newestVerified, scanCheckpoints, type VerifiedCandidate } from './_scan';
import type { CheckpointStore, HubCkptLogger, Manifest, Pointer } from './types';
import { verifyCheckpoint } from './verify-checkpoint';

export interface ResolveResumeOptions {
  store: CheckpointStore;
  /** Fingerprint of the run asking to resume. */
  run: string;
  /** When the pointed checkpoint is corrupt, walk back to the newest verified one instead of refusing. @default false */
  fallback?: boolean;
  /** Rewrite latest.json when resuming from another checkpoint than it names. @default true */
  repair?: boolean;
  /** @default silent */
  logger?: HubCkptLogger;
}

/** What a session should do. Refusals (another run's pointer, a corrupt checkpoint) are thrown. */
export type ResumeOutcome =
  | {
      outcome: 'fresh';
      /** `repo-missing`: nothing there yet (the first push creates it); `no-checkpoint`: the repo holds no pointer and no verified checkpoint of this run. */
      reason: 'repo-missing' | 'no-checkpoint';
    }
  | { outcome: 'complete'; step: number; pathInRepo: string; pointer: Pointer }
  | {
      outcome: 'resume';
      step: number;
      pathInRepo: string;
      manifest: Manifest;
      manifestSha256: string;
      /** The pointer now in force (after a repair, the new one). */
      pointer: Pointer;
      /**
       * Why this is not simply the pointed checkpoint: `newer-verified` (a crash between verify and pointer
       * left a newer verified checkpoint), `fallback` (the pointed one was corrupt), `no-pointer`
       * (verified checkpoints but no latest.json); null when it is the pointed one.
       */
      via: 'newer-verified' | 'fallback' | 'no-pointer' | null;
      /** Step latest.json named before, when `via` is set and there was one. */
      previousStep: number | null;
      /** Whether latest.json was rewritten. */
      repaired: boolean;
    };

/**
 * Decides where a session resumes from: `fresh` (repo missing or empty), `complete` (terminal pointer
 * of this run), or `resume` from the pointed checkpoint once verified — or from a newer verified one,
 * repairing the pointer. Throws StaleRunError for another run's pointer and CorruptCheckpointError
 * when the pointed checkpoint does not verify (unless `fallback`).
 */
export async function resolveResume(opts: ResolveResumeOptions): Promise<ResumeOutcome> {
  const { store, run } = opts;
  assertStepAndRun(0, run);
  const repair = opts.repair ?? true;
  const log = (line: string): void => opts.logger?.info?.(line);

  if (!(await store.exists())) return { outcome: 'fresh', reason: 'repo-missing' };

  const resumeFrom = async (c: VerifiedCandidate, via: 'newer-verified' | 'fallback' | 'no-pointer', previousStep: number | null): Promise<ResumeOutcome> => {
    const pointer = makePointer({ step: c.step, pathInRepo: c.pathInRepo, run, terminal: false, manifestSha256: c.manifestSha256 });
    if (repair) {
      await store.commit({
        message: `soup: repair latest.json -> ${c.pathInRepo} (step ${c.step}, ${via})`,
        operations: [{ kind: 'put', path: POINTER_PATH, bytes: pointerBytes(pointer) }],
      });
      log(`${store.description}: latest.json repaired to ${c.pathInRepo} (${via})`);
    }
    return { outcome: 'resume', step: c.step, pathInRepo: c.pathInRepo, manifest: c.manifest, manifestSha256: c.manifestSha256, pointer, via, previousStep, repaired: repair };
  };

  const current = await readPointer(store);
  if (current.raw === null) {
    const c = await newestVerified({ store, run, bySteps: await scanCheckpoints(store), accept: () => true });
    return c ? resumeFrom(c, 'no-pointer', null) : { outcome: 'fresh', reason: 'no-checkpoint' };
  }

  const pointer = current.pointer;
  if (pointer === null) {
    const problems = current.errors;
    if (opts.fallback) {
      const c = await newestVerified({ store, run, bySteps: await scanCheckpoints(store), accept: () => true });
      if (c) return resumeFrom(c, 'fallback', null);
    }
    throw new CorruptCheckpointError(
      `${store.description}: latest.json is invalid (${problems.join('; ')}). ` +
        (opts.fallback ? 'No verified checkpoint of this run to fall back to.' : 'Resume with fallback to use the newest verified checkpoint instead.'),
      { pathInRepo: POINTER_PATH, problems },
    );
  }
  if (pointer.run !== run) throw new StaleRunError({ pointerRun: pointer.run, run, pointerStep: pointer.step, where: store.description });
  if (pointer.terminal) return { outcome: 'complete', step: pointer.step, pathInRepo: pointer.path_in_repo, pointer };

  const bySteps = await scanCheckpoints(store);
  const pointed = await verifyCheckpoint({
    store,
    pathInRepo: pointer.path_in_repo,
    expectedManifestSha256: pointer.manifest_sha256,
    expectedRun: run,
    expectedStep: pointer.step,
    entries: bySteps.get(pointer.step) ?? [],
  });
  if (!pointed.ok || !pointed.manifest) {
    if (opts.fallback) {
      const c = await newestVerified({ store, run, bySteps, accept: (s) => s !== pointer.step });
      if (c) return resumeFrom(c, 'fallback', pointer.step);
    }
    throw new CorruptCheckpointError(
      `${store.description}: latest.json names ${pointer.path_in_repo} (step ${pointer.step}), which does not verify: ` +
        `${pointed.problems.slice(0, 5).join('; ')}. ` +
        (opts.fallback ? 'No other verified checkpoint of this run to fall back to.' : 'Refusing to resume from it; resume with fallback to walk back to the newest verified checkpoint.'),
      { pathInRepo: pointer.path_in_repo, problems: pointed.problems },
    );
  }
  const newer = await newestVerified({ store, run, bySteps, accept: (s) => s > pointer.step });
  if (newer) return resumeFrom(newer, 'newer-verified', pointer.step);
  return {
    outcome: 'resume',
    step: pointer.step,
    pathInRepo: pointer.path_in_repo,
    manifest: pointed.manifest,
    manifestSha256: pointer.manifest_sha256,
    pointer,
    via: null,
    previousStep: null,
    repaired: false,
  };
}
