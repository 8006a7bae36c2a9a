import { counterUniform } from './_random';
import { DataError } from './errors';
import type { TrainBatch } from './make-synthetic-batch';

export interface TokenSamplerOptions {
  tokens: Uint8Array;
  seqLen: number;
  /** @default 0 */
  seed?: number;
  /** Windows already drawn (resume point). @default 0 */
  cursor?: number;
}

/**
 * Deterministic, resumable sampler of training windows: window number k starts at a position
 * drawn from a counter-based generator of (seed, k), so the state is just `cursor` (windows
 * drawn so far) and a resumed run draws exactly the windows the uninterrupted run would.
 */
export class TokenSampler {
  readonly seqLen: number;
  readonly seed: number;
  private readonly tokens: Uint8Array;
  private next: number;

  constructor(options: TokenSamplerOptions) {
    const { tokens, seqLen } = options;
    if (!Number.isInteger(seqLen) || seqLen < 1)
      throw new DataError(`seqLen must be a positive integer (got ${seqLen})`);
    if (tokens.length < seqLen + 1)
      throw new DataError(`the text has ${tokens.length} tokens; one window needs seqLen + 1 = ${seqLen + 1}`);
    const cursor = options.cursor ?? 0;
    if (!Number.isSafeInteger(cursor) || cursor < 0)
      throw new DataError(`cursor must be a non-negative integer (got ${cursor})`);
    this.tokens = tokens;
    this.seqLen = seqLen;
    this.seed = options.seed ?? 0;
    this.next = cursor;
  }

  /** Windows drawn so far. */
  get cursor(): number {
    return this.next;
  }

  /** Start offset of window `k`. */
  windowStart(k: number): number {
    const starts = this.tokens.length - this.seqLen; // valid starts: 0 .. len - seqLen - 1
    return Math.min(starts - 1, Math.floor(counterUniform(this.seed, 0x5eed, k) * starts));
  }

  /** The batch of windows `cursor .. cursor + batchSize - 1`, without moving the cursor. */
  batchAt(cursor: number, batchSize: number): TrainBatch {
    const T = this.seqLen;
    const inputIds = new BigInt64Array(batchSize * T);
    const labels = new BigInt64Array(batchSize * T);
    for (let b = 0; b < batchSize; b++) {
      const s = this.windowStart(cursor + b);
      for (let t = 0; t < T; t++) {
        inputIds[b * T + t] = BigInt(this.tokens[s + t]!);
        labels[b * T + t] = BigInt(this.tokens[s + t + 1]!);
      }
    }
    return { batchSize, inputIds, labels };
  }

  /** The next batch; advances the cursor by `batchSize`. */
  nextBatch(batchSize: number): TrainBatch {
    if (!Number.isInteger(batchSize) || batchSize < 1)
      throw new DataError(`batchSize must be a positive integer (got ${batchSize})`);
    const batch = this.batchAt(this.next, batchSize);
    this.next += batchSize;
    return batch;
  }
}

/** Consecutive, non-overlapping windows from the start of `tokens`, grouped in batches (evaluation). */
export function sequentialBatches(options: {
  tokens: Uint8Array;
  seqLen: number;
  batchSize: number;
  maxBatches: number;
}): TrainBatch[] {
  const { tokens, seqLen: T, batchSize, maxBatches } = options;
  const windows = Math.min(Math.floor((tokens.length - 1) / T), batchSize * maxBatches);
  const out: TrainBatch[] = [];
  for (let w0 = 0; w0 < windows; w0 += batchSize) {
    const n = Math.min(batchSize, windows - w0);
    const inputIds = new BigInt64Array(n * T);
    const labels = new BigInt64Array(n * T);
    for (let b = 0; b < n; b++) {
      const s = (w0 + b) * T;
      for (let t = 0; t < T; t++) {
        inputIds[b * T + t] = BigInt(tokens[s + t]!);
        labels[b * T + t] = BigInt(tokens[s + t + 1]!);
      }
    }
    out.push({ batchSize: n, inputIds, labels });
  }
  return out;
}
