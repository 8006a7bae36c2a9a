// soup train's optimizer step as the tuner counts it: a micro-steps and the update once, and the
// update timed on a real session (tiny model, CPU).
import { divisorsOf } from '@soup/batch-probe';
import { defineGptSpec } from '@soup/onnx-train';
import { describe, expect, it } from 'vitest';
import { samplesPerSecond } from './choose-configuration';
import { globalStepAt, globalStepMs, perMicroBatch, samplesPerSecondOf, stepAtGlobal, timeUpdate } from './global-step';

const G = 32;
const u = { updateMs: 40, microBatchSize: 1 };

describe('globalStepMs', () => {
  it('counts the update once per optimizer step, not once per micro-batch', () => {
    expect(globalStepMs({ microMs: 100, updateMs: 40, a: 8 })).toBe(840); // not 8 × (100 + 40) = 1120
    expect(globalStepMs({ microMs: 100, updateMs: 40, a: 1 })).toBe(140);
  });
});

describe('globalStepAt', () => {
  it('is a micro-steps and the update below G, the whole step timed at G, and a steps without an update timing', () => {
    expect(globalStepAt(G, 4, 100, u)).toBe(8 * 100 + 40);
    expect(globalStepAt(G, 32, 500, u)).toBe(500); // a = 1: soup train runs the whole step
    expect(globalStepAt(G, 4, 100, null)).toBe(800);
  });

  it('has stepAtGlobal as its inverse at every divisor of G, with and without the update', () => {
    for (const m of divisorsOf(G))
      for (const stepMs of [3, 47.5, 612])
        for (const t of [u, null]) expect(stepAtGlobal(G, m, globalStepAt(G, m, stepMs, t), t)).toBeCloseTo(stepMs, 9);
  });
});

describe('perMicroBatch', () => {
  it('shows a row whose G / (a × step) is the samples/s of its optimizer step, at every divisor of G', () => {
    for (const m of divisorsOf(G)) {
      const shown = perMicroBatch(G, m, { stepMs: 90, noiseMs: 3 }, u);
      const row = { label: `m=${m}`, microBatchSize: m, accumulation: G / m, peakBytes: null, ...shown };
      expect(samplesPerSecond(row, G)).toBeCloseTo(samplesPerSecondOf(G, m, 90, u), 9);
      expect(samplesPerSecondOf(G, m, 90, u)).toBeCloseTo((G / globalStepAt(G, m, 90, u)) * 1000, 9);
      expect(shown.noiseMs).toBe(3);
    }
  });

  it('ranks a micro-batch with fewer updates to share as the optimizer step does', () => {
    // m = 4 (a = 8) micro-steps of 100 ms against m = 8 (a = 4) of 205 ms, an update of 40 ms:
    // 840 ms against 860 ms an optimizer step. Counting the update with every micro-batch would
    // rank them the other way: 8 × 140 = 1120 against 4 × 245 = 980.
    const at4 = samplesPerSecondOf(G, 4, 100, u);
    const at8 = samplesPerSecondOf(G, 8, 205, u);
    expect(at4).toBeGreaterThan(at8);
    expect(at4).toBeCloseTo((G / 840) * 1000, 9);
  });
});

describe('timeUpdate', () => {
  it('times the update of real accumulated steps at the given micro-batch', async () => {
    const spec = defineGptSpec({ vocabSize: 256, seqLen: 8, dModel: 16, nHeads: 2, nLayers: 1, dFF: 32 });
    const t = await timeUpdate({
      spec,
      recompute: [],
      batchSize: 1,
      threads: 1,
      offload: null,
      cwd: process.cwd(),
      executionProvider: 'cpu',
      deviceId: 0,
      rounds: 3,
    });
    expect(t.microBatchSize).toBe(1);
    expect(Number.isFinite(t.updateMs)).toBe(true);
    expect(t.updateMs).toBeGreaterThan(0);
  });
});
