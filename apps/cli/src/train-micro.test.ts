// The pure parts of soup train's micro-batch: validation at m (an allocation failure answered, not thrown),
// the line a session starts with, --max-memory, and the tuner's own peak beside the trainer's.
import { TrainStepError } from '@soup/onnx-train';
import { resolveMaxMemory, type SessionPeakReport } from '@soup/supervisor';
import { describe, expect, it } from 'vitest';
import { describeMicroBatch, describeTuning } from './_session';
import { microBatchesOf, validate } from './_train-micro';
import { parseBytes } from '@soup/config';

const ORT_OOM =
  'training step failed at batch size 16: Non-zero status code returned while running Gemm node. Status Message: ' +
  'bfc_arena.cc:360 Failed to allocate memory for requested buffer of size 67108864';

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
        ),
      ).rejects.toThrow(/shape mismatch/);
    },
  );
});

describe('describeMicroBatch', () => {
  it('says what changed since the last session', () => {
    const last = { start_step: 1, micro_batch_size: 16, grad_accum: 1, source: 'probe', oom_step_downs: [] };
    expect(describeMicroBatch({ microBatchSize: 4, accumulation: 4 }, last)).toBe(
      'micro 4 × 4 = 16 (was 16 × 1 last session)',
    );
    expect(describeMicroBatch({ microBatchSize: 16, accumulation: 1 }, last)).toBe('micro 16 × 1 = 16');
    expect(describeMicroBatch({ microBatchSize: 4, accumulation: 4 }, undefined)).toBe('micro 4 × 4 = 16');
  });
});

describe('--max-memory', () => {
  it('a size or a fraction of the budget; a fraction without a budget is unknown', () => {
    expect(resolveMaxMemory('6GiB', null, parseBytes)).toBe(6 * 2 ** 30);
    expect(resolveMaxMemory('0.9', 1000, parseBytes)).toBe(900);
    expect(resolveMaxMemory('90%', 1000, parseBytes)).toBe(900);
    expect(resolveMaxMemory('90%', null, parseBytes)).toBeNull();
    expect(resolveMaxMemory(undefined, 1000, parseBytes)).toBeNull();
  });
});

describe("the tuner's peak, measured apart", () => {
  it("reports the tuner's peak beside the trainer's, never counted in it, and nothing without one", () => {
    const MiB = 2 ** 20;
    const report = (tuning: SessionPeakReport['tuning']): SessionPeakReport => ({
      peak_bytes: 300 * MiB,
      peak_at: 'step 3',
      peak_step: 3,
      budget_bytes: 400 * MiB,
      budget_source: 'memory_budget',
      headroom_bytes: 100 * MiB,
      max_memory_bytes: null,
      max_memory_passed_at: null,
      method: 'tree-rss',
      ...(tuning ? { tuning } : {}),
    });
    expect(
      describeTuning(report({ peak_bytes: 671 * MiB, in_session_peak: false, resident_at_reset_bytes: null })),
    ).toBe(
      "; before it, the tuner's timing sessions took soup's own process to 671 MiB (measured apart: the trainer " +
        'is a process of its own)',
    );
    expect(describeTuning(report(undefined))).toBe('');
    expect(describeTuning(null)).toBe('');
  });
});
