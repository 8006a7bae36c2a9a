// Whether an error raised by soup's own trainer (a step, a validation batch) is an allocation failure a
// smaller micro-batch can answer. The step-down itself is the supervisor's: it relaunches the trainer from
// the newest complete checkpoint with the next smaller divisor of G.
import { classifyOutOfMemory, createTrainerOomJudge } from '@soup/cuda-probe';
import type { SuperviseOptions, TrainerExit } from '@soup/supervisor';

/** The out-of-memory line of a step's error, or null when it is not one a smaller micro-batch can answer. */
export function stepOomLine(err: unknown): string | null {
  if (!(err instanceof Error)) return null;
  // A step that had begun to write its parameters (the segmented optimizer) cannot be redone.
  if ((err as { stateChanged?: unknown }).stateChanged === true) return null;
  const c = classifyOutOfMemory(err.message);
  return c.oom ? (c.line ?? err.message) : null;
}

/**
 * The supervisor's out-of-memory judge for soup run and soup train, as supervise() options: the line the trainer
 * raised, or the kernel's evidence that it OOM-killed the trainer (read from each launch on), else null.
 */
export function trainerOomJudge(): Pick<SuperviseOptions, 'judgeOutOfMemory' | 'onTrainerLaunched'> {
  const judge = createTrainerOomJudge();
  return {
    onTrainerLaunched: (pid) => judge.launched(pid),
    judgeOutOfMemory: (exit: TrainerExit) =>
      judge.judge({
        stdout: exit.stdoutTail.join('\n'),
        stderr: exit.stderrTail.join('\n'),
        code: exit.code,
        signal: exit.signal,
      }),
  };
}
