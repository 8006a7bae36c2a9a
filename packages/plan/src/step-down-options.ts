// A session's out-of-memory step-down with a global batch: the kill judged on the kernel's evidence
// (@soup/cuda-probe), the next m a divisor of G / N (@soup/batch-probe), supervise() acting on both.
import { nextMicroBatchSize } from '@soup/batch-probe';
import { createTrainerOomJudge } from '@soup/cuda-probe';
import type { OomStepDown, SuperviseOptions } from '@soup/supervisor';

/** With a global batch: the judge (@soup/cuda-probe), the next divisor of G / N (@soup/batch-probe) and the retries. */
export function stepDownOptions(p: {
  globalBatchSize: number;
  worldSize: number;
  maxOomRetries: number;
  onOomStepDown: (s: OomStepDown) => void | Promise<void>;
}): Partial<SuperviseOptions> {
  const { globalBatchSize, worldSize } = p;
  // A kernel OOM kill is judged on the kernel's evidence, read from each launch on.
  const oom = createTrainerOomJudge();
  return {
    globalBatchSize,
    worldSize,
    maxOomRetries: p.maxOomRetries,
    onTrainerLaunched: (pid) => oom.launched(pid),
    judgeOutOfMemory: (exit) => oom.judge(exit),
    nextMicroBatchSize: (m) => nextMicroBatchSize({ globalBatchSize, microBatchSize: m, worldSize }),
    onOomStepDown: p.onOomStepDown,
  };
}
