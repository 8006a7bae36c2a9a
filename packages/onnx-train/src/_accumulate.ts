// Gradient accumulation's pure parts, shared by the fused and the segmented step: the micro-batches
// of a global batch, each one's weight, and the weighted sum of their gradients.
import { TrainInputError } from './errors';
import type { FloatArray } from './init-parameters';
import type { TrainBatch } from './make-synthetic-batch';
import { releaseBuffers } from './_release-buffers';
import type { DataParallel } from './step-types';

/** One micro-batch of a global batch and its share of the loss (its tokens over the batch's). */
export interface MicroBatch {
  batch: TrainBatch;
  weight: number;
}

/**
 * Splits `batch` (the global batch G) into G / `microBatchSize` micro-batches of consecutive rows
 * (views, no copy). Every token counts in the loss, so each one's weight is m / G: the weighted
 * sum of the micro-batches' mean losses (and gradients) is the mean over all G sequences' tokens.
 * `undefined` or m ≥ G: the batch itself, weight 1.
 * @throws {TrainInputError} m not a positive integer, or not a divisor of G
 */
export function splitMicroBatches(batch: TrainBatch, microBatchSize: number | undefined): MicroBatch[] {
  const G = batch.batchSize;
  if (microBatchSize === undefined || microBatchSize === G) return [{ batch, weight: 1 }];
  const m = microBatchSize;
  if (!Number.isInteger(m) || m < 1) throw new TrainInputError(`microBatchSize must be a positive integer (got ${m})`);
  if (m > G || G % m !== 0) {
    throw new TrainInputError(
      `microBatchSize ${m} does not divide the batch of ${G}: pass a divisor of ${G} (the accumulation a = ${G}` +
        ` / m must be whole)`,
    );
  }
  const rows = batch.inputIds.length / G;
  const out: MicroBatch[] = [];
  for (let i = 0; i < G; i += m) {
    out.push({
      batch: {
        batchSize: m,
        inputIds: batch.inputIds.subarray(i * rows, (i + m) * rows),
        labels: batch.labels.subarray(i * rows, (i + m) * rows),
      },
      weight: m / G,
    });
  }
  return out;
}

/**
 * `acc += weight × grad` in place; with no `acc`, `grad` itself is scaled in place and returned (it becomes the
 * accumulator).
 */
export function addScaled(acc: FloatArray | undefined, grad: FloatArray, weight: number): FloatArray {
  if (acc === undefined) {
    if (weight !== 1) for (let i = 0; i < grad.length; i++) grad[i] = grad[i]! * weight;
    return grad;
  }
  for (let i = 0; i < acc.length; i++) acc[i] = acc[i]! + grad[i]! * weight;
  return acc;
}

/** Every rank runs the same number of micro-batches: G / m must split evenly over the ranks. */
export function checkDataParallel(dp: DataParallel, microBatches: number): void {
  const { rank, worldSize } = dp;
  if (!Number.isInteger(worldSize) || worldSize < 2 || !Number.isInteger(rank) || rank < 0 || rank >= worldSize)
    throw new TrainInputError(
      `data parallel needs 0 <= rank < worldSize, worldSize >= 2 (got ${rank} of ${worldSize})`,
    );
  if (microBatches % worldSize !== 0)
    throw new TrainInputError(
      `data parallel: ${microBatches} micro-batches do not split over ${worldSize} ranks (G must be m × a × ranks)`,
    );
}

/**
 * A micro-step's gradients summed into `sum` as an accumulated step sums each micro-batch's (a
 * weight below 1: every element scaled and added), the new arrays freed once added.
 */
export function sumInto(sum: Map<string, FloatArray>, grads: Iterable<[string, FloatArray]>): void {
  for (const [name, g] of grads) {
    const had = sum.get(name);
    sum.set(name, addScaled(had, g, 0.5));
    if (had !== undefined) releaseBuffers([g]);
  }
}

/**
 * Runs `pass` (forward + backward) on each micro-batch and sums its weighted loss and gradients.
 * One micro-batch: its result as it is. A failing pass frees what was accumulated and rethrows.
 */
export async function accumulateMicroBatches<S>(
  micro: readonly MicroBatch[],
  pass: (batch: TrainBatch) => Promise<{ loss: number; grads: Map<string, FloatArray>; stats: S }>,
): Promise<{ loss: number; grads: Map<string, FloatArray>; stats: S }> {
  if (micro.length === 1) return pass(micro[0]!.batch);
  const grads = new Map<string, FloatArray>();
  let loss = 0;
  let stats: S | undefined;
  try {
    for (const mb of micro) {
      const r = await pass(mb.batch);
      loss += mb.weight * r.loss;
      stats = r.stats;
      for (const [name, g] of r.grads) {
        const had = grads.get(name);
        grads.set(name, addScaled(had, g, mb.weight));
        if (had !== undefined) releaseBuffers([g]);
      }
    }
  } catch (err) {
    releaseBuffers(grads.values());
    throw err;
  }
  return { loss, grads, stats: stats! };
}
