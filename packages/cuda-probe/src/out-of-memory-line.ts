// The out-of-memory line a supervisor's step-down acts on: from an error a step raised in this process,
// or from what a trainer process left when it exited. Anything else is not one a smaller micro-batch answers.
import { classifyOutOfMemory } from './classify-out-of-memory';
import { judgeTrainerExit } from './judge-trainer-exit';

/** The out-of-memory line of a step's error, or null when it is not one a smaller micro-batch can answer. */
export function stepOomLine(err: unknown): string | null {
  if (!(err instanceof Error)) return null;
  // A step that had begun to write its parameters (the segmented optimizer) cannot be redone.
  if ((err as { stateChanged?: unknown }).stateChanged === true) return null;
  const c = classifyOutOfMemory(err.message);
  return c.oom ? (c.line ?? err.message) : null;
}

/** The tails of a trainer's output and how it ended (the supervisor's `TrainerExit` is one). */
export interface TrainerExitTails {
  stdoutTail: string[];
  stderrTail: string[];
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A supervisor's out-of-memory judge: the out-of-memory line the trainer raised, else null. */
export function trainerOomLine(exit: TrainerExitTails): string | null {
  const v = judgeTrainerExit({
    stdout: exit.stdoutTail.join('\n'),
    stderr: exit.stderrTail.join('\n'),
    code: exit.code,
    signal: exit.signal,
  });
  return v.oom ? (v.line ?? 'out of memory') : null;
}
