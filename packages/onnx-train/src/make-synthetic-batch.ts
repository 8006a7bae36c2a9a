import { Xoshiro128 } from './_random';
import type { GptSpec } from './gpt-spec';

/** One training batch: row-major `[batchSize, seqLen]` token ids and next-token labels. */
export interface TrainBatch {
  batchSize: number;
  inputIds: BigInt64Array;
  labels: BigInt64Array;
}

export interface MakeSyntheticBatchOptions {
  spec: Pick<GptSpec, 'vocabSize' | 'seqLen'>;
  batchSize: number;
  /** @default 0 */
  seed?: number;
}

/**
 * A random batch (uniform token ids, labels = ids shifted by one) for probing memory and
 * speed at a batch size without any data: what `@soup/cuda-probe` feeds one step.
 */
export function makeSyntheticBatch(options: MakeSyntheticBatchOptions): TrainBatch {
  const { spec, batchSize } = options;
  const T = spec.seqLen;
  const rng = new Xoshiro128(options.seed ?? 0);
  const inputIds = new BigInt64Array(batchSize * T);
  const labels = new BigInt64Array(batchSize * T);
  for (let b = 0; b < batchSize; b++) {
    let prev = rng.nextU32() % spec.vocabSize;
    for (let t = 0; t < T; t++) {
      const next = rng.nextU32() % spec.vocabSize;
      inputIds[b * T + t] = BigInt(prev);
      labels[b * T + t] = BigInt(next);
      prev = next;
    }
  }
  return { batchSize, inputIds, labels };
}
