// Whether an error raised by soup's own trainer (a step, a validation batch) is an allocation failure a
// smaller micro-batch can answer. The step-down itself is the supervisor's: it relaunches the trainer from
// the newest complete checkpoint with the next smaller divisor of G.
import { classifyOutOfMemory, judgeTrainerExit } from '@soup/cuda-probe';
import type { TrainerExit } from '@soup/supervisor';

/** The out-of-memory line of a step's error, or null when it is not one a smaller micro-batch can answer. */
export function stepOomLine(err: unknown): string | null {
  if (!(err instanceof Error)) return null;
  // A step that had begun to write its parameters (the segmented optimizer) cannot be redone.
  if ((err as { stateChanged?: unknown }).stateChanged === true) return null;
  const c = classifyOutOfMemory(err.message);
  return c.oom ? (c.line ?? err.message) : null;
}

/** The supervisor's judge for soup run and soup train: the out-of-memory line the trainer raised, else null. */
export function trainerOomLine(exit: TrainerExit): string | null {
  const v = judgeTrainerExit({
    stdout: exit.stdoutTail.join('\n'),
    stderr: exit.stderrTail.join('\n'),
    code: exit.code,
    signal: exit.signal,
  });
  return v.oom ? (v.line ?? 'out of memory') : null;
}
