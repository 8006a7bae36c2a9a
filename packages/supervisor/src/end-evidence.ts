// The evidence a session's end rests on, this run's only: the trainer_state.json files and the done marker
// this run wrote (an earlier run's leftovers at the top of {output_dir} prove nothing), and whether any of this
// session's pushes went through.
import type { PushJob } from '@soup/hub-ckpt';
import { DONE_MARKER, readTrainerState, type TrainerStateSteps } from './horizon';
import type { CheckpointWatcher, WatchedCheckpoint } from './watch-checkpoints';

/** This run's trainer states and done marker, for {@link judgeHorizon}. */
export function thisRunsEndState(p: {
  outputDir: string;
  finalDir: string | null;
  newest: WatchedCheckpoint | null;
  watcher: CheckpointWatcher;
}): { states: TrainerStateSteps[]; doneMarker: boolean } {
  const states: TrainerStateSteps[] = [];
  if (p.watcher.isThisRunsFile('trainer_state.json')) states.push(readTrainerState(p.outputDir));
  if (p.newest?.kind === 'dir') states.push(readTrainerState(p.newest.path));
  if (p.finalDir !== null) states.push(readTrainerState(p.finalDir));
  if (states.length === 0) states.push({ globalStep: null, maxSteps: null });
  return { states, doneMarker: p.watcher.isThisRunsFile(DONE_MARKER) };
}

/** A push failure as @soup/hub-ckpt's queue records it. */
export interface PushFailure {
  job: PushJob;
  error: unknown;
}

/**
 * When this session tried to push and every push failed, the error a run must end with instead of "complete"
 * (the last one with a `code`, so the exit code is the refusal's), and a line naming each refused step; else null.
 */
export function everyPushFailed(
  failures: readonly PushFailure[],
  pushedStep: number | null,
): { error: unknown; line: string } | null {
  if (pushedStep !== null || failures.length === 0) return null;
  const coded = failures.filter((f) => typeof (f.error as { code?: unknown } | null)?.code === 'string');
  const last = (coded.at(-1) ?? failures.at(-1))!;
  const steps = [...new Set(failures.map((f) => f.job.step))].sort((a, b) => a - b);
  const why = (last.error as Error | null)?.message ?? String(last.error);
  return {
    error: last.error,
    line:
      `not complete: every push of this session failed (step${steps.length === 1 ? '' : 's'} ` +
      `${steps.join(', ')}), so nothing of this run is resumable from the store; no final/ and no terminal ` +
      `pointer. Last refusal: ${why}`,
  };
}
