// The pure parts of soup train's micro-batch: which errors are an allocation failure, validation at m,
// the line a session starts with, and the tuner's own peak (VmHWM, reset after tuning).
import { TrainStepError } from '@soup/onnx-train';
import { useTempDir } from '@soup/test-utils';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeMicroBatch } from './_micro-sessions';
import { stepOomLine } from './_oom-step-down';
import { resetHighWaterMark, resolveMaxMemory, type SessionPeakReport } from './_session-peak';
import { microBatchesOf, validate } from './_train-micro';
import { describeTuning } from './_train-lines';
import { parseBytes } from '@soup/config';

const ORT_OOM =
  'training step failed at batch size 16: Non-zero status code returned while running Gemm node. Status Message: ' +
  'bfc_arena.cc:360 Failed to allocate memory for requested buffer of size 67108864';

describe('stepOomLine', () => {
  it(
    'names the allocation failure a smaller micro-batch can answer (the supervisor then steps m down), and ' +
      'nothing else',
    () => {
      expect(
        stepOomLine(new TrainStepError('training step failed at batch size 4: Invalid input name: input_ids')),
      ).toBeNull();
      // A step that had begun to update its parameters cannot be redone.
      expect(stepOomLine(new TrainStepError(ORT_OOM, { stateChanged: true }))).toBeNull();
      expect(stepOomLine(new TrainStepError(ORT_OOM))).toMatch(/Failed to allocate memory/);
    },
  );
});

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

describe("the tuner's peak, measured apart (resetHighWaterMark)", () => {
  const vmHwm = (): number => Number(/^VmHWM:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))![1]) * 1024;

  it.skipIf(process.platform !== 'linux')(
    "returns the peak so far and resets the kernel's mark to what is resident now",
    () => {
      setFlagsFromString('--expose-gc');
      const gc = runInNewContext('gc') as () => void;
      let big: Buffer | null = Buffer.alloc(256 * 2 ** 20, 1); // resident: every page written
      const held = vmHwm();
      big = null;
      gc();
      const r = resetHighWaterMark();
      expect(big).toBeNull();
      expect(r.reset).toBe(true);
      expect(r.peakBytes!).toBeGreaterThanOrEqual(held);
      expect(vmHwm()).toBeLessThan(r.peakBytes! - 200 * 2 ** 20); // the 256 MiB are no longer in the mark
    },
  );

  it('says when the mark could not be reset (no clear_refs to write), and keeps the peak', () => {
    const proc = join(useTempDir(), 'self');
    mkdirSync(join(proc, 'clear_refs'), { recursive: true }); // a directory: the write fails
    writeFileSync(join(proc, 'status'), 'VmHWM:\t 5000 kB\n');
    expect(resetHighWaterMark(proc)).toEqual({ peakBytes: 5000 * 1024, reset: false, residentAtResetBytes: null });
  });

  it.skipIf(process.platform !== 'linux')(
    'says what is resident when the mark is reset: what follows is never below it',
    () => {
      const held = Buffer.alloc(64 * 2 ** 20, 1); // resident: every page written, and still referenced
      const r = resetHighWaterMark();
      expect(r.reset).toBe(true);
      expect(r.residentAtResetBytes!).toBeGreaterThanOrEqual(64 * 2 ** 20);
      expect(r.residentAtResetBytes!).toBeLessThanOrEqual(r.peakBytes!);
      expect(vmHwm()).toBeGreaterThanOrEqual(r.residentAtResetBytes!);
      expect(held[held.length - 1]).toBe(1);
    },
  );

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
