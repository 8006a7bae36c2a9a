// What a tuner reads of an accumulated step (real sessions): the one update's time, reported apart
// from the micro-batches; a micro-step that runs one micro-batch as the accumulated step runs each
// of them and changes nothing; and a step whose whole-step session is opened only when it is used.
import { describe, expect, it } from 'vitest';
import { createTrainStep } from './create-train-step';
import { defineGptSpec } from './gpt-spec';
import { makeSyntheticBatch } from './make-synthetic-batch';
import type { TrainStepState } from './step-types';

const spec = defineGptSpec({ vocabSize: 256, seqLen: 8, dModel: 16, nHeads: 2, nLayers: 1, dFF: 32 });
const base = { spec, seed: 3, intraOpNumThreads: 1 } as const;
const batchOf = (n: number) => makeSyntheticBatch({ spec, batchSize: n, seed: 5 });

const sameState = (a: TrainStepState, b: TrainStepState): void => {
  expect(a.step).toBe(b.step);
  for (const k of ['parameters', 'm', 'v'] as const)
    for (const [name, x] of a[k]) expect([name, Array.from(x)]).toEqual([name, Array.from(b[k].get(name)!)]);
};

describe('updateMs', () => {
  it('is the one update of an accumulated step, apart from its micro-batches; null for a fused step', async () => {
    const step = await createTrainStep(base);
    try {
      const whole = await step.run(batchOf(4));
      expect(whole.updateMs).toBeNull();
      const acc = await step.run(batchOf(4), { microBatchSize: 1 });
      expect(acc.accumulation).toBe(4);
      expect(typeof acc.updateMs).toBe('number');
      expect(acc.updateMs!).toBeGreaterThan(0);
      expect(acc.updateMs!).toBeLessThan(acc.totalMs);
    } finally {
      await step.release();
    }
  });

  it('is reported by the segmented step, whose update always runs apart', async () => {
    const step = await createTrainStep({ ...base, execution: 'segmented' });
    try {
      for (const r of [await step.run(batchOf(2)), await step.run(batchOf(4), { microBatchSize: 2 })]) {
        expect(typeof r.updateMs).toBe('number');
        expect(r.updateMs!).toBeGreaterThan(0);
        expect(r.updateMs!).toBeLessThan(r.totalMs);
      }
    } finally {
      await step.release();
    }
  });
});

describe('microStep', () => {
  for (const execution of ['fused', 'segmented'] as const) {
    it(`${execution}: runs one micro-batch and changes neither the parameters, the moments nor the step`, async () => {
      const step = await createTrainStep({ ...base, execution });
      try {
        await step.run(batchOf(2)); // moments that are not zero
        const before = step.getState();
        for (let i = 0; i < 3; i++) expect((await step.microStep(batchOf(2))).totalMs).toBeGreaterThan(0);
        sameState(step.getState(), before);
        expect(step.step).toBe(1);
      } finally {
        await step.release();
      }
    });
  }
});

describe('deferSession', () => {
  it('opens the whole step on first use: micro-steps and accumulated steps, then the same whole step', async () => {
    const deferred = await createTrainStep({ ...base, deferSession: true });
    const eager = await createTrainStep(base);
    try {
      await deferred.microStep(batchOf(2));
      const acc = await Promise.all([deferred, eager].map((s) => s.run(batchOf(4), { microBatchSize: 2 })));
      expect(acc[0]!.loss).toBe(acc[1]!.loss);
      const whole = await Promise.all([deferred, eager].map((s) => s.run(batchOf(4))));
      expect(whole[0]!.loss).toBe(whole[1]!.loss);
      sameState(deferred.getState(), eager.getState());
    } finally {
      await deferred.release();
      await eager.release();
    }
  });
});
