// soup train's tuner on real step sessions (tiny model, CPU, G = 4): the accumulate path's update is
// timed once for the whole search, and every row below G counts it once per optimizer step.
import { defineGptSpec } from '@soup/onnx-train';
import { useTempDir } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import { samplesPerSecond } from './choose-configuration';
import { globalStepMs } from './global-step';
import { makeTuneKey, saveTuneEntry } from './tune-cache';
import { tuneTrain } from './tune-train';

const G = 4;
const spec = defineGptSpec({ vocabSize: 256, seqLen: 8, dModel: 16, nHeads: 2, nLayers: 1, dFF: 32 });

const optionsIn = (cwd: string) =>
  ({
    spec,
    globalBatchSize: G,
    threads: 1,
    device: { kind: 'cpu', id: 0 },
    tiers: [null],
    offloads: [null],
    offloadIsLever: false,
    recomputeOf: () => [],
    cacheCommand: 'update-test',
    command: 'update-test',
    budgetBytes: null,
    gpuName: 'cpu',
    gpuMemoryGb: 0,
    noCache: true,
    // every divisor fits: the fit is not what this test is about
    resolveMicro: async () => ({ batchSize: G, trials: [{ batch_size: G, result: 'fit', peak_bytes: 2 ** 20 }] }),
    steps: 3,
    cwd,
  }) as const;

describe('tuneTrain and the update', () => {
  it('times the update once and counts it once in each row below G', async () => {
    const r = await tuneTrain(optionsIn(useTempDir()));
    const u = r.update!;
    expect(u).not.toBeNull();
    expect(u.microBatchSize).toBe(1);
    expect(u.updateMs).toBeGreaterThan(0);
    expect(r.entry.timedBy).toContain(`the update (${u.updateMs.toFixed(1)} ms`);
    const timed = r.entry.rows.filter((x) => x.stepMs !== null);
    expect(timed.some((x) => x.accumulation! > 1)).toBe(true);
    for (const row of timed) {
      const a = row.accumulation!;
      // a row's step is its optimizer step over a: a micro-steps and one update below G
      const microMs = a === 1 ? row.stepMs! : row.stepMs! - u.updateMs / a;
      expect(microMs).toBeGreaterThan(0);
      const optimizerStepMs = a === 1 ? row.stepMs! : globalStepMs({ microMs, updateMs: u.updateMs, a });
      expect(row.samplesPerSecond!).toBeCloseTo((G / optimizerStepMs) * 1000, 6);
      expect(samplesPerSecond(row, G)).toBeCloseTo(row.samplesPerSecond!, 6);
    }
  });

  it('measures again where the tune cache holds a choice made charging the update to every micro-batch', async () => {
    const cwd = useTempDir();
    const cache = { env: {}, homeDir: cwd, cwd };
    // the key a tuner that charged the update a times wrote its choice under
    const before = makeTuneKey({
      command: 'update-test',
      tries: { gradient_checkpointing: ['false'] },
      globalBatchSize: G,
      worldSize: 1,
      budgetBytes: null,
      gpuName: 'cpu',
      gpuMemoryGb: 0,
    });
    const row = { label: 'gradient_checkpointing=false', values: { gradient_checkpointing: 'false' } };
    await saveTuneEntry(
      before,
      {
        chosen: 0,
        reason: 'charged the update a times',
        rows: [{ ...row, microBatchSize: 2, accumulation: 2, peakBytes: null, stepMs: 9, noiseMs: 1 }].map((x) => ({
          ...x,
          samplesPerSecond: (G / (2 * 9)) * 1000,
          note: null,
        })),
        globalBatchSize: G,
        worldSize: 1,
        timeSteps: 3,
        budgetBytes: null,
        gpuName: 'cpu',
        gpuMemoryGb: 0,
        command: 'update-test',
        savedAt: new Date().toISOString(),
      },
      cache,
    );
    const first = await tuneTrain({ ...optionsIn(cwd), noCache: false, cache });
    expect(first.source).toBe('measured');
    expect(first.update).not.toBeNull();
    const again = await tuneTrain({ ...optionsIn(cwd), noCache: false, cache });
    expect(again.source).toBe('cache');
    expect(again.entry.rows).toEqual(first.entry.rows);
  });
});
