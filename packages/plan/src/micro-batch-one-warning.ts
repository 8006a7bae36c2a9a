// A micro-batch of 1 under a global batch with larger divisors: each step accumulates G / N micro-batches of one,
// which a G with more divisors may avoid. One warning for soup run, soup probe --exec and soup train.
import { divisorsOf } from '@soup/batch-probe';
import type { TrainerMicro } from './trainer-batch';

/**
 * The warning when m = 1 and G / worldSize > 1, naming the next divisor (which did not fit) and a G with more
 * divisors; null otherwise. `globalBatchName`: where G was set, as messages name it. @default '--global-batch-size'
 */
export function microBatchOneWarning(
  o: Pick<TrainerMicro, 'globalBatchSize' | 'worldSize'> & { batchSize: number; globalBatchName?: string },
): string | null {
  const { globalBatchSize: G, worldSize: N } = o;
  const perRank = G / N;
  if (o.batchSize !== 1 || perRank === 1) return null;
  const what = N === 1 ? `${o.globalBatchName ?? '--global-batch-size'} ${G}` : `G / world size = ${perRank}`;
  return (
    `micro-batch 1: no larger divisor of ${what} fits this device (the next, ${divisorsOf(perRank)[1]}, did not), ` +
    `so each step accumulates ${perRank} micro-batches of 1; a global batch with more divisors (e.g. ` +
    `${perRank + (perRank % 2)}${N === 1 ? '' : ' per rank'}) may use the device better`
  );
}
