// soup train's answer to an allocation failure raised by a step: the next smaller divisor of G as
// the micro-batch, and the same step again from the state before it (the step changes nothing
// until its one optimizer update). Pure apart from the step it is handed.
import { nextMicroBatchSize } from '@soup/batch-probe';
import { classifyOutOfMemory } from '@soup/cuda-probe';
import type { OomStepDown } from './_micro-sessions';

/** The out-of-memory line of a step's error, or null when it is not one a smaller micro-batch can answer. */
export function stepOomLine(err: unknown): string | null {
  if (!(err instanceof Error)) return null;
  // A step that had begun to write its parameters (the segmented optimizer) cannot be redone.
  if ((err as { stateChanged?: unknown }).stateChanged === true) return null;
  const c = classifyOutOfMemory(err.message);
  return c.oom ? (c.line ?? err.message) : null;
}

/** Options of {@link stepWithStepDown}. */
export interface StepWithStepDownOptions<T> {
  /** Runs one step at the current micro-batch; throws what the step raised. */
  step: () => Promise<T>;
  globalBatchSize: number;
  /** The micro-batch now. */
  microBatchSize: () => number;
  /** Switches the step to m (may rebuild it: awaited). */
  setMicroBatchSize: (m: number) => void | Promise<void>;
  /** The step about to be taken (recorded with a step-down). */
  stepNumber: number;
  /** Step-downs this session may still make (the caller keeps the count across steps). */
  retriesLeft: () => number;
  /** Called for each step-down before the step is redone. */
  onStepDown: (s: OomStepDown) => void;
}

/**
 * Runs `step`; when it raises an out-of-memory error (the classifier's verdict on its message)
 * and a smaller divisor of G is left and retries remain, steps m down and runs it again.
 * Anything else (or no retry left, or m = 1) is rethrown.
 */
export async function stepWithStepDown<T>(o: StepWithStepDownOptions<T>): Promise<T> {
  for (;;) {
    try {
      return await o.step();
    } catch (err) {
      const line = stepOomLine(err);
      if (line === null || o.retriesLeft() <= 0) throw err;
      const from = o.microBatchSize();
      const to = nextMicroBatchSize({ globalBatchSize: o.globalBatchSize, microBatchSize: from });
      if (to === null) throw err;
      await o.setMicroBatchSize(to);
      o.onStepDown({ step: o.stepNumber, from, to, error: line });
    }
  }
}
