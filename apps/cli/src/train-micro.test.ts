// The pure parts of soup train's micro-batch: the step-down on an allocation failure, the line a
// session starts with, and the session's peak (VmHWM read phase by phase, from fixture files).
import { TrainStepError } from '@soup/onnx-train';
import { useTempDir } from '@soup/test-utils';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeMicroBatch, type OomStepDown } from './_micro-sessions';
import { stepOomLine, stepWithStepDown } from './_oom-step-down';
import { resetHighWaterMark, resolveMaxMemory, SessionPeak } from './_session-peak';
import { describePeak, microBatchesOf, validate } from './_train-micro';
import { parseBytes } from './parse-bytes';

const ORT_OOM =
  'training step failed at batch size 16: Non-zero status code returned while running Gemm node. Status Message: bfc_arena.cc:360 Failed to allocate memory for requested buffer of size 67108864';

/** A step that fails with ORT's allocation error above `capacity`. */
function run(capacity: number, retries: number, G = 24, start = 24) {
  let m = start;
  const downs: OomStepDown[] = [];
  const tried: number[] = [];
  const result = stepWithStepDown({
    step: async () => {
      tried.push(m);
      if (m > capacity) throw new TrainStepError(ORT_OOM);
      return m;
    },
    globalBatchSize: G,
    microBatchSize: () => m,
    setMicroBatchSize: async (x) => {
      m = x;
    },
    stepNumber: 7,
    retriesLeft: () => retries - downs.length,
    onStepDown: (s) => void downs.push(s),
  });
  return { result, downs, tried };
}

describe('stepWithStepDown', () => {
  it('steps m down to the next divisor of G on each allocation failure and redoes the step', async () => {
    const r = run(10, 3);
    expect(await r.result).toBe(8);
    expect(r.tried).toEqual([24, 12, 8]);
    expect(r.downs).toEqual([
      { step: 7, from: 24, to: 12, error: expect.stringMatching(/Failed to allocate memory/) },
      { step: 7, from: 12, to: 8, error: expect.stringMatching(/Failed to allocate memory/) },
    ]);
  });

  it('gives up after --max-oom-retries, at m = 1, and on any other error', async () => {
    const limited = run(5, 3);
    await expect(limited.result).rejects.toThrow(TrainStepError);
    expect(limited.tried).toEqual([24, 12, 8, 6]);
    const none = run(5, 0);
    await expect(none.result).rejects.toThrow(/Failed to allocate/);
    expect(none.tried).toEqual([24]);
    const prime = run(0, 10, 7, 7);
    await expect(prime.result).rejects.toThrow(TrainStepError);
    expect(prime.tried).toEqual([7, 1]);
    expect(
      stepOomLine(new TrainStepError('training step failed at batch size 4: Invalid input name: input_ids')),
    ).toBeNull();
    // A step that had begun to update its parameters cannot be redone.
    expect(stepOomLine(new TrainStepError(ORT_OOM, { stateChanged: true }))).toBeNull();
    expect(stepOomLine(new TrainStepError(ORT_OOM))).toMatch(/Failed to allocate memory/);
  });
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

  it('an allocation failure at validation answers "unknown" with the batch and the error; other errors are thrown', async () => {
    const batches = microBatchesOf([valBatch(10)], 4);
    const seen: number[] = [];
    const ok = await validate({ trainStep: { evaluate: async (b) => (seen.push(b.batchSize), b.batchSize) } }, batches);
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
  });
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

describe('SessionPeak', () => {
  it('puts the peak in the phase where VmHWM last rose (a jump at validation), warns once past --max-memory', () => {
    const proc = join(useTempDir(), 'self');
    mkdirSync(proc);
    const hwm = (kb: number): void =>
      writeFileSync(join(proc, 'status'), `Name:\tnode\nVmHWM:\t ${kb} kB\nVmRSS:\t 1000 kB\n`);
    const warnings: string[] = [];
    hwm(100_000);
    const peak = new SessionPeak({
      budgetBytes: 400_000 * 1024,
      budgetSource: 'memory_budget',
      maxMemoryBytes: 250_000 * 1024,
      warn: (l) => void warnings.push(l),
      procSelf: proc,
    });
    hwm(200_000);
    peak.mark('step 1', 1);
    peak.mark('step 2', 2);
    hwm(210_000);
    peak.mark('step 3', 3);
    hwm(300_000);
    peak.mark('validation', 3);
    hwm(320_000);
    peak.mark('save and push final', 3);
    expect(peak.report()).toEqual({
      peak_bytes: 320_000 * 1024,
      peak_at: 'save and push final',
      peak_step: 3,
      budget_bytes: 400_000 * 1024,
      budget_source: 'memory_budget',
      headroom_bytes: 80_000 * 1024,
      max_memory_bytes: 250_000 * 1024,
      max_memory_passed_at: 'validation',
      method: 'VmHWM',
    });
    expect(warnings).toEqual([
      `memory: the peak passed --max-memory at validation: ${300_000 * 1024} bytes > ${250_000 * 1024} bytes`,
    ]);
  });

  it('no /proc: unknown, not zero; --max-memory as a size or a fraction of the budget', () => {
    const peak = new SessionPeak({
      budgetBytes: null,
      budgetSource: null,
      maxMemoryBytes: null,
      warn: () => {},
      procSelf: '/nonexistent',
    });
    peak.mark('step 1', 1);
    expect(peak.report()).toMatchObject({
      peak_bytes: null,
      peak_at: null,
      headroom_bytes: null,
      method: 'unavailable',
    });
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

  it("reports the tuning phase beside the session's peak, counted in it or not, and nothing without one", () => {
    const proc = join(useTempDir(), 'self');
    mkdirSync(proc);
    writeFileSync(join(proc, 'status'), 'VmHWM:\t 300000 kB\n');
    const MiB = 2 ** 20;
    const at = (tuning: { peakBytes: number | null; reset: boolean; residentAtResetBytes?: number | null } | null) =>
      new SessionPeak({
        budgetBytes: 400 * MiB,
        budgetSource: 'memory_budget',
        maxMemoryBytes: null,
        warn: () => {},
        procSelf: proc,
        tuning: tuning && { residentAtResetBytes: null, ...tuning },
      }).report();
    expect(at({ peakBytes: 671 * MiB, reset: true }).tuning).toEqual({
      peak_bytes: 671 * MiB,
      in_session_peak: false,
      resident_at_reset_bytes: null,
    });
    expect(describePeak(at({ peakBytes: 671 * MiB, reset: true }))).toMatch(
      /; before it, the tuner's timing sessions took this process to 671 MiB \(measured apart: the high-water mark was reset after tuning\)$/,
    );
    expect(at({ peakBytes: 671 * MiB, reset: true, residentAtResetBytes: 480 * MiB }).tuning).toEqual({
      peak_bytes: 671 * MiB,
      in_session_peak: false,
      resident_at_reset_bytes: 480 * MiB,
    });
    expect(describePeak(at({ peakBytes: 671 * MiB, reset: true, residentAtResetBytes: 480 * MiB }))).toMatch(
      /; before it, the tuner's timing sessions took this process to 671 MiB \(measured apart: the high-water mark was reset after tuning, to the 480 MiB resident then\)$/,
    );
    expect(describePeak(at({ peakBytes: 671 * MiB, reset: false }))).toMatch(
      /; it includes the tuner's timing sessions \(671 MiB through tuning: the high-water mark could not be reset after it\)$/,
    );
    expect(at(null)).not.toHaveProperty('tuning');
    expect(describePeak(at(null))).not.toMatch(/tuner/);
  });
});
