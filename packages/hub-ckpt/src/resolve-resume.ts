import { assertStepAndRun } from './build-manifest';
import { CorruptCheckpointError, StaleRunError } from './errors';
import { makePointer, pointerBytes, readPointer } from './_pointer';
import { sha256Hex } from './_fs';
import { checkpointPath, POINTER_PATH } from './_layout';
import { resumeCandidates } from './_resume-order';
import { scanCheckpoints } from './_scan';
import type { CheckpointStore, HubCkptLogger, Manifest, Pointer } from './types';
import { verifyCheckpoint } from './verify-checkpoint';

export interface ResolveResumeOptions {
  store: CheckpointStore;
  /** Fingerprint of the run asking to resume. */
  run: string;
  /**
   * When the pointed checkpoint is corrupt, walk back to the newest verified one instead of refusing. @default false
   */
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
      /**
       * `repo-missing`: nothing there yet (the first push creates it); `no-checkpoint`: the repo holds no pointer and
       * no verified checkpoint of this run.
       */
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
 * Decides where a session resumes from, without pulling: `fresh` (repo missing or empty), `complete`
 * (terminal pointer of this run), or `resume` from the first checkpoint that verifies in the order of
 * {@link resumeCandidates} (newer verified ones, the pointed one, then — with `fallback` — older ones),
 * repairing the pointer when it is not the pointed one. Throws StaleRunError for another run's pointer
 * and CorruptCheckpointError when nothing verifies. It reads listings, not every byte: use
 * {@link pullResume} to also survive corruption at rest.
 */
export async function resolveResume(opts: ResolveResumeOptions): Promise<ResumeOutcome> {
  const { store, run } = opts;
  assertStepAndRun(0, run);
  const repair = opts.repair ?? true;
  const fallback = opts.fallback ?? false;
  const log = (line: string): void => opts.logger?.info?.(line);

  if (!(await store.exists())) return { outcome: 'fresh', reason: 'repo-missing' };
  const current = await readPointer(store);
  const pointer = current.pointer;
  if (pointer && pointer.run !== run)
    throw new StaleRunError({ pointerRun: pointer.run, run, pointerStep: pointer.step, where: store.description });
  if (pointer?.terminal) return { outcome: 'complete', step: pointer.step, pathInRepo: pointer.path_in_repo, pointer };

  const bySteps = await scanCheckpoints(store);
  const candidates = resumeCandidates({
    hasPointerFile: current.raw !== null,
    pointer,
    steps: [...bySteps.keys()],
    fallback,
  });
  let pointedProblems: string[] | null = null;
  for (const c of candidates) {
    const pathInRepo = checkpointPath(c.step);
    const v = await verifyCheckpoint({
      store,
      pathInRepo,
      expectedRun: run,
      expectedStep: c.step,
      entries: bySteps.get(c.step) ?? [],
      ...(c.expectedManifestSha256 !== undefined ? { expectedManifestSha256: c.expectedManifestSha256 } : {}),
    });
    if (!v.ok || !v.manifest || !v.manifestSha256) {
      if (c.via === null) pointedProblems = v.problems;
      continue;
    }
    if (c.via === null && pointer) {
      return {
        outcome: 'resume',
        step: c.step,
        pathInRepo,
        manifest: v.manifest,
        manifestSha256: v.manifestSha256,
        pointer,
        via: null,
        previousStep: null,
        repaired: false,
      };
    }
    const next = makePointer({ step: c.step, pathInRepo, run, terminal: false, manifestSha256: v.manifestSha256 });
    if (repair) {
      await store.commit({
        message: `soup: repair latest.json -> ${pathInRepo} (step ${c.step}, ${c.via})`,
        operations: [{ kind: 'put', path: POINTER_PATH, bytes: pointerBytes(next) }],
        ifMatch: { path: POINTER_PATH, sha256: current.raw === null ? null : sha256Hex(current.raw) },
      });
      log(`${store.description}: latest.json repaired to ${pathInRepo} (${c.via})`);
    }
    const via = c.via ?? 'fallback';
    return {
      outcome: 'resume',
      step: c.step,
      pathInRepo,
      manifest: v.manifest,
      manifestSha256: v.manifestSha256,
      pointer: next,
      via,
      previousStep: pointer?.step ?? null,
      repaired: repair,
    };
  }

  if (current.raw === null) return { outcome: 'fresh', reason: 'no-checkpoint' };
  if (pointer === null) {
    throw new CorruptCheckpointError(
      `${store.description}: latest.json is invalid (${current.errors.join('; ')}). ` +
        (fallback
          ? 'No verified checkpoint of this run to fall back to.'
          : 'Resume with fallback to use the newest verified checkpoint instead.'),
      { pathInRepo: POINTER_PATH, problems: current.errors },
    );
  }
  const problems = pointedProblems ?? [`${pointer.path_in_repo} is not a checkpoint folder`];
  throw new CorruptCheckpointError(
    `${store.description}: latest.json names ${pointer.path_in_repo} (step ${pointer.step}), which does not verify: ` +
      `${problems.slice(0, 5).join('; ')}. ` +
      (fallback
        ? 'No other verified checkpoint of this run to fall back to.'
        : 'Refusing to resume from it; resume with fallback to walk back to the newest verified checkpoint.'),
    { pathInRepo: pointer.path_in_repo, problems },
  );
}
