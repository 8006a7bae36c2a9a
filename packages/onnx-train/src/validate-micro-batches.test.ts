// The trainer child's validation at the micro-batch: batches cut into pieces of at most m, and an allocation
// failure answered, not thrown.
import { describe, expect, it } from 'vitest';
import { TrainStepError } from './errors';
import { microBatchesOf, validate } from './validate-micro-batches';

const ORT_OOM =
  'training step failed at batch size 16: Non-zero status code returned while running Gemm node. Status Message: ' +
  'bfc_arena.cc:360 Failed to allocate memory for requested buffer of size 67108864';

/** The caller's out-of-memory judge (soup passes @soup/cuda-probe's stepOomLine): ORT's allocation failure. */
const oomLine = (err: unknown): string | null =>
  err instanceof TrainStepError && /Failed to allocate memory/.test(err.message) ? err.message : null;

/** `n` validation sequences of 3 tokens; token i of sequence k is k. */
function valBatch(n: number) {
  const inputIds = new BigInt64Array(n * 3).map((_, i) => BigInt(Math.floor(i / 3)));
  return { batchSize: n, inputIds, labels: inputIds.slice() };
}

describe('validation at the micro-batch', () => {
  it('cuts every validation batch into pieces of at most m sequences, keeping each sequence whole and in order', () => {
    for (const [n, m, sizes] of [
      [122, 512, [122]],
      [122, 32, [32, 32, 32, 26]],
      [24, 8, [8, 8, 8]],
      [7, 3, [3, 3, 1]],
    ] as const) {
      const pieces = microBatchesOf([valBatch(n)], m);
      expect(pieces.map((p) => p.batchSize)).toEqual(sizes);
      expect(pieces.flatMap((p) => [...p.inputIds].filter((_, i) => i % 3 === 0).map(Number))).toEqual([
        ...Array(n).keys(),
      ]);
      for (const p of pieces) expect(p.inputIds.length).toBe(p.batchSize * 3);
    }
  });

  it(
    'an allocation failure at validation answers "unknown" with the batch and the error; other errors ' + 'are thrown',
    async () => {
      const batches = microBatchesOf([valBatch(10)], 4);
      const seen: number[] = [];
      const ok = await validate(
        { trainStep: { evaluate: async (b) => (seen.push(b.batchSize), b.batchSize) } },
        batches,
        oomLine,
      );
      expect(ok).toEqual({ loss: (4 * 4 + 4 * 4 + 2 * 2) / 10, windows: 10 });
      expect(seen).toEqual([4, 4, 2]);
      const oom = await validate(
        {
          trainStep: {
            evaluate: async (b) => {
              if (b.batchSize < 4) throw new TrainStepError(ORT_OOM);
              return 1;
            },
          },
        },
        batches,
        oomLine,
      );
      expect(oom).toEqual({ oom: expect.stringMatching(/Failed to allocate memory/), batchSize: 2 });
      await expect(
        validate(
          {
            trainStep: {
              evaluate: async () => {
                throw new Error('shape mismatch');
              },
            },
          },
          batches,
          oomLine,
        ),
      ).rejects.toThrow(/shape mismatch/);
    },
  );
});
