// The trainer child's validation at the micro-batch: batches cut into pieces of at most m sequences, and an
// allocation failure answered as "validation loss unknown" (the trained weights are kept).
import type { TrainBatch } from './make-synthetic-batch';

/**
 * The validation batches cut into micro-batches of at most m sequences (the last piece of a batch
 * that m does not divide is smaller): validation never asks for more memory than a training micro-batch.
 */
export function microBatchesOf(batches: readonly TrainBatch[], m: number): TrainBatch[] {
  const out: TrainBatch[] = [];
  for (const b of batches) {
    if (b.batchSize <= m) {
      out.push(b);
      continue;
    }
    const rows = b.inputIds.length / b.batchSize;
    for (let i = 0; i < b.batchSize; i += m) {
      const n = Math.min(m, b.batchSize - i);
      out.push({
        batchSize: n,
        inputIds: b.inputIds.subarray(i * rows, (i + n) * rows),
        labels: b.labels.subarray(i * rows, (i + n) * rows),
      });
    }
  }
  return out;
}

/**
 * Mean validation loss over `batches` (weighted by sequences). An allocation failure is answered
 * with what failed, not thrown: the run's training is done, and its weights are worth keeping.
 * `oomLine` judges an error: its out-of-memory line, else null (the judge is the caller's).
 */
export async function validate(
  trainer: { trainStep: { evaluate(b: TrainBatch): Promise<number> } },
  batches: readonly TrainBatch[],
  oomLine: (err: unknown) => string | null,
): Promise<{ loss: number; windows: number } | { oom: string; batchSize: number }> {
  let weighted = 0;
  let windows = 0;
  for (const b of batches) {
    let loss: number;
    try {
      loss = await trainer.trainStep.evaluate(b);
    } catch (err) {
      const line = oomLine(err);
      if (line === null) throw err;
      return { oom: line, batchSize: b.batchSize };
    }
    weighted += loss * b.batchSize;
    windows += b.batchSize;
  }
  return { loss: weighted / windows, windows };
}
