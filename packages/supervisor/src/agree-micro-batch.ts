// One micro-batch for all ranks: each node probes its own device, and every rank trains the smallest answer (a
// larger m would not fit the node that answered less). G is kept: a = G / (m × world size).
import { divisorsOf, largestDivisorAtMost } from '@soup/batch-probe';
import { MicroAgreementError } from './errors';

/** One node's answer: the micro-batch its device fits, under which budget. */
export interface NodeMicroAnswer {
  /** The node's rank (0 leads). */
  rank: number;
  /** The node's host name, for the log. */
  host: string;
  /** The micro-batch this node's probe (or cache) answered. */
  m: number;
  /** The memory budget the probe measured against, in bytes; null: the device's free memory. */
  budget: number | null;
}

/** What every node trains, and which node decided it. */
export interface AgreedMicroBatch {
  microBatchSize: number;
  /** a = G / (m × world size). */
  accumulation: number;
  /** The answer that decided (the smallest m; the lowest rank on a tie). */
  decidedBy: NodeMicroAnswer;
  /** `micro-batch 4: node 1 fits least (budget 300 MiB)`. */
  line: string;
}

const mib = (bytes: number): string => `${Math.round(bytes / 2 ** 20)} MiB`;

/**
 * The smallest m any node answered, and a = G / (m × worldSize).
 * @throws {MicroAgreementError} no answers, or G not a multiple of m × worldSize (naming the nearest workable G
 *   and m)
 */
export function agreeMicroBatch(p: {
  answers: readonly NodeMicroAnswer[];
  globalBatchSize: number;
  worldSize: number;
}): AgreedMicroBatch {
  const { answers, globalBatchSize: G, worldSize: N } = p;
  const first = answers[0];
  if (first === undefined) throw new MicroAgreementError('micro-batch agreement: no node answered');
  let least = first;
  for (const a of answers) if (a.m < least.m || (a.m === least.m && a.rank < least.rank)) least = a;
  const m = least.m;
  if (G % (m * N) !== 0) throw new MicroAgreementError(refusal(G, N, m, least));
  const budget = least.budget === null ? "the device's free memory" : `budget ${mib(least.budget)}`;
  const who = answers.length === 1 ? `node ${least.rank}` : `node ${least.rank} (${least.host}) fits least`;
  return {
    microBatchSize: m,
    accumulation: G / (m * N),
    decidedBy: least,
    line: `micro-batch ${m}: ${who} (${budget})`,
  };
}

/** G = 12 does not split as m 5 × 2 ranks: the nearest G that does (10, 20) and the largest m that keeps G. */
function refusal(G: number, N: number, m: number, least: NodeMicroAnswer): string {
  const unit = m * N;
  const below = Math.floor(G / unit) * unit;
  const gs = [below, below + unit].filter((g) => g > 0);
  const keep = G % N === 0 ? largestDivisorAtMost(G / N, m) : null;
  const ms =
    keep === null
      ? `or a global batch that ${N} ranks share equally (a multiple of ${N})`
      : `or keep G ${G} with m ${keep} (a divisor of G / world size = ${G / N}: ${divisorsOf(G / N).join(', ')})`;
  return (
    `micro-batch agreement: node ${least.rank} (${least.host}) fits m ${m}, and global batch ${G} is not a ` +
    `multiple of m × world size = ${m} × ${N}: nearest workable global batch ${gs.join(' or ')} with m ${m}, ${ms}`
  );
}
