// Gradient accumulation: G = 16 trained as 16 × 1 and as 4 × 4 must be the same training run.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { useTempDir } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import { splitMicroBatches } from './_accumulate';
import { DataError, TrainInputError } from './errors';
import { defineGptSpec } from './gpt-spec';
import type { FloatArray } from './init-parameters';
import { makeSyntheticBatch } from './make-synthetic-batch';
import { Trainer, type TrainerOptions, type TrainerStepLog } from './trainer';

const text = readFileSync(fileURLToPath(new URL('./__fixtures__/soup.txt', import.meta.url)), 'utf8');
const spec = defineGptSpec({ vocabSize: 256, seqLen: 16, dModel: 16, nHeads: 2, nLayers: 2, dFF: 32 });
const G = 16;
const STEPS = 50;
const base: TrainerOptions = {
  spec,
  text,
  batchSize: G,
  totalSteps: STEPS,
  lr: 3e-3,
  warmupSteps: 5,
  seed: 7,
  intraOpNumThreads: 1,
};

async function trainRun(
  opts: Partial<TrainerOptions>,
  until = STEPS,
  from?: string,
): Promise<{ logs: TrainerStepLog[]; params: Map<string, FloatArray>; trainer: Trainer }> {
  const o = { ...base, ...opts };
  const trainer = from ? await Trainer.fromCheckpoint({ ...o, dir: from }) : await Trainer.create(o);
  const logs: TrainerStepLog[] = [];
  await trainer.train({ untilStep: until, onStep: (l) => void logs.push(l) });
  return { logs, params: trainer.trainStep.getParameters(), trainer };
}

function maxRel(a: number, b: number): number {
  return Math.abs(a - b) / Math.max(1e-12, Math.abs(b));
}

function maxAbsDiff(a: ReadonlyMap<string, FloatArray>, b: ReadonlyMap<string, FloatArray>): number {
  let worst = 0;
  for (const [name, x] of a) {
    const y = b.get(name)!;
    for (let i = 0; i < x.length; i++) worst = Math.max(worst, Math.abs(x[i]! - y[i]!));
  }
  return worst;
}

function expectSameRun(
  logs: TrainerStepLog[],
  ref: TrainerStepLog[],
  params: Map<string, FloatArray>,
  refParams: Map<string, FloatArray>,
): void {
  expect(logs.map((l) => l.step)).toEqual(ref.map((l) => l.step));
  const worstLoss = Math.max(...logs.map((l, i) => maxRel(l.loss, ref[i]!.loss)));
  expect(worstLoss).toBeLessThanOrEqual(1e-5);
  expect(maxAbsDiff(params, refParams)).toBeLessThanOrEqual(1e-5);
}

describe('gradient accumulation (threads 1)', () => {
  it(`G = ${G} as 16 × 1 and as 4 × 4: the same loss curve (1e-5 relative per step) and final weights (1e-5) over ` +
    `${STEPS} steps, fused`, {
    timeout: 300_000,
  }, async () => {
    const whole = await trainRun({});
    const accumulated = await trainRun({ microBatchSize: 4 });
    expect(whole.logs.every((l) => l.microBatchSize === 16 && l.accumulation === 1)).toBe(true);
    expect(accumulated.logs.every((l) => l.microBatchSize === 4 && l.accumulation === 4)).toBe(true);
    expectSameRun(accumulated.logs, whole.logs, accumulated.params, whole.params);
    // The run learns (the comparison is not between two runs that did nothing).
    expect(whole.logs.at(-1)!.loss).toBeLessThan(0.8 * whole.logs[0]!.loss);
    await whole.trainer.close();
    await accumulated.trainer.close();
  });

  it('on resume: session 1 ran 16 × 1, session 2 ran 4 × 4 (budgeted down): the same run as 16 × 1 throughout', {
    timeout: 300_000,
  }, async () => {
    const dir = useTempDir();
    const whole = await trainRun({});
    const first = await trainRun({}, 25);
    const ckpt = first.trainer.saveCheckpoint(join(dir, 'checkpoint-25'));
    await first.trainer.close();
    const second = await trainRun({ microBatchSize: 4 }, STEPS, ckpt.dir);
    expect(second.logs.map((l) => `${l.microBatchSize}×${l.accumulation}`)).toEqual(Array(25).fill('4×4'));
    expectSameRun([...first.logs, ...second.logs], whole.logs, second.params, whole.params);
    await whole.trainer.close();
    await second.trainer.close();
  });

  it('segmented: 4 × 4 equals 16 × 1 (10 steps), and a failing micro-batch leaves the state as it was', {
    timeout: 300_000,
  }, async () => {
    const whole = await trainRun({ execution: 'segmented' }, 10);
    const accumulated = await trainRun({ execution: 'segmented', microBatchSize: 4 }, 10);
    expect(accumulated.logs.every((l) => l.accumulation === 4)).toBe(true);
    expectSameRun(accumulated.logs, whole.logs, accumulated.params, whole.params);
    await whole.trainer.close();
    // A micro-batch with a token outside the vocabulary fails in the 3rd micro-batch: nothing changed.
    const step = accumulated.trainer.trainStep;
    const before = step.getState();
    const bad = makeSyntheticBatch({ spec, batchSize: G, seed: 1 });
    bad.inputIds[9 * spec.seqLen] = 999n;
    await expect(step.run(bad, { microBatchSize: 4 })).rejects.toThrow(TrainInputError);
    expect(step.step).toBe(before.step);
    expect(maxAbsDiff(step.getParameters(), before.parameters)).toBe(0);
    await accumulated.trainer.close();
  });

  it('refuses an m that does not divide G, naming both', async () => {
    const batch = makeSyntheticBatch({ spec, batchSize: 12 });
    expect(() => splitMicroBatches(batch, 5)).toThrow(/microBatchSize 5 does not divide the batch of 12/);
    expect(() => splitMicroBatches(batch, 0)).toThrow(TrainInputError);
    expect(splitMicroBatches(batch, 4).map((m) => [m.batch.batchSize, m.weight, m.batch.inputIds.length])).toEqual([
      [4, 1 / 3, 4 * 16],
      [4, 1 / 3, 4 * 16],
      [4, 1 / 3, 4 * 16],
    ]);
    expect(splitMicroBatches(batch, 4)[1]!.batch.labels[0]).toBe(batch.labels[4 * 16]);
    await expect(Trainer.create({ ...base, microBatchSize: 3 })).rejects.toThrow(DataError);
  });
});
