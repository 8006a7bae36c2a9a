// The resume scan: pull this run's newest checkpoint that verifies (walking back past a corrupt one).
import { StaleRunError, type CheckpointStore } from '@soup/hub-ckpt';
import { resumeSupervised, type SupervisedResume } from './resume-supervised';
import type { SessionFacts, SessionOptions, SuperviseOutcome } from './supervise-options';
import type { Tell } from './_tell';

/**
 * Pulls what the session resumes from into `o.outputDir`, telling what it skipped and why. With `--resume force`, a
 * store whose pointer names another run with no soup_run.json is continued as that run (`runId` then names it);
 * any other refusal goes to `o.refusal` when given.
 */
export async function pullResume(p: {
  o: SessionOptions;
  store: CheckpointStore;
  storeName: string;
  runId: string;
  force: boolean;
  facts: SessionFacts;
  tell: Tell;
}): Promise<{ resumed: SupervisedResume; runId: string }> {
  const { o, store, storeName, facts } = p;
  const { emit, say, warn, show } = p.tell;
  let runId = p.runId;
  const pull = async (): Promise<SupervisedResume> => {
    const t = Date.now();
    const r = await resumeSupervised({
      store,
      run: runId,
      outputDir: o.outputDir,
      signal: o.signal,
      log: (l) => say(l),
      ...(o.horizon != null ? { reopenBelow: o.horizon } : {}),
    });
    if (r.outcome !== 'resume') return r;
    if (r.via === 'reopened') {
      say(
        `run ${runId} was complete at step ${r.previousStep} (${storeName} final/); its horizon is now ` +
          `${o.horizon}: continuing from ${r.pathInRepo} (step ${r.step})`,
      );
    }
    for (const s of r.skipped)
      warn(`${s.pathInRepo} (step ${s.step}) does not verify or pull cleanly: ${s.problems.slice(0, 2).join('; ')}`);
    if (r.via === 'fallback') {
      warn(
        `falling back to ${r.pathInRepo} (step ${r.step}), the newest checkpoint that verifies and pulls ` +
          `cleanly${r.previousStep !== null ? ` (latest.json names step ${r.previousStep})` : ''}`,
      );
    } else if (r.via === 'newer-verified') {
      say(
        `${r.pathInRepo} (step ${r.step}) was verified after latest.json last moved (step ` +
          `${r.previousStep}): resuming from it`,
      );
    }
    facts.startStep = r.step;
    emit(
      'resumed',
      `pulled ${r.pathInRepo} (step ${r.step}, ${r.fileCount} files, every sha256 checked) into ` +
        `${show(r.dir)} in ${Date.now() - t} ms`,
      { step: r.step },
    );
    return r;
  };
  try {
    return { resumed: await pull(), runId };
  } catch (err) {
    if (err instanceof StaleRunError && p.force) {
      warn(
        `--resume force: ${storeName} holds run ${err.pointerRun} (step ${err.pointerStep}) with no ` +
          `soup_run.json; continuing it as this run`,
      );
      runId = err.pointerRun;
      return { resumed: await pull(), runId };
    }
    if (o.refusal) return o.refusal(err, runId);
    throw err;
  }
}

/** The outcome when the store already holds the run's final/: complete, nothing launched. */
export function completeInStore(
  resumed: Extract<SupervisedResume, { outcome: 'complete' }>,
  runId: string,
  storeName: string,
  tell: Tell,
): SuperviseOutcome {
  tell.say(
    `run ${runId} is complete: ${storeName} ${resumed.pathInRepo}/ holds step ${resumed.step}; nothing to launch`,
    'outcome',
  );
  return {
    outcome: 'complete',
    run: runId,
    step: resumed.step,
    pathInRepo: resumed.pathInRepo,
    launched: false,
    evidence: 'store',
  };
}
