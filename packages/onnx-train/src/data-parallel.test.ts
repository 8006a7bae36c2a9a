// Data parallel: two ranks, each running half of every batch's micro-batches and exchanging the results, train the
// bit-identical weights of one process at the same G and m (the sum runs in micro-batch order on every rank).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { TrainInputError } from './errors';
import { defineGptSpec } from './gpt-spec';
import type { FloatArray } from './init-parameters';
import type { DataParallel, MicroBatchResult } from './step-types';
import { Trainer, type TrainerOptions } from './trainer';

const text = readFileSync(fileURLToPath(new URL('./__fixtures__/soup.txt', import.meta.url)), 'utf8');
const spec = defineGptSpec({ vocabSize: 256, seqLen: 16, dModel: 16, nHeads: 2, nLayers: 1, dFF: 32 });
const base: TrainerOptions = {
  spec,
  text,
  batchSize: 4,
  microBatchSize: 1,
  totalSteps: 3,
  lr: 3e-3,
  warmupSteps: 1,
  seed: 3,
  intraOpNumThreads: 1,
};

/** An in-process all-gather for `worldSize` ranks: each call resolves once every rank has handed in its share. */
function gatherOf(worldSize: number, handedIn: number[] = []): (rank: number) => DataParallel {
  let waiting: { parts: MicroBatchResult[][]; done: (all: MicroBatchResult[]) => void; all: Promise<unknown> };
  const reset = (): void => {
    let done!: (all: MicroBatchResult[]) => void;
    const all = new Promise<MicroBatchResult[]>((r) => (done = r));
    waiting = { parts: [], done, all };
  };
  reset();
  return (rank) => ({
    rank,
    worldSize,
    exchange: (mine) => {
      const round = waiting;
      round.parts[rank] = mine;
      handedIn.push(mine.length);
      if (Object.keys(round.parts).length === worldSize) {
        reset();
        round.done(round.parts.flat());
      }
      // Each rank owns what it gets back (the step scales and frees it), as bytes off a socket are.
      return round.all.then((all) =>
        (all as MicroBatchResult[]).map((r) => ({ loss: r.loss, grads: r.grads.map((g) => g.slice()) })),
      );
    },
  });
}

function bytesOf(params: Map<string, FloatArray>): string {
  return [...params]
    .map(([n, a]) => `${n}:${Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString('hex')}`)
    .join();
}

describe('Trainer.step({dataParallel})', () => {
  it('2 ranks × m 1 × a 2 train the bytes of 1 process × m 1 × a 4', async () => {
    const one = await Trainer.create(base);
    for (let s = 0; s < 3; s++) await one.step();
    const ranks = await Promise.all([Trainer.create(base), Trainer.create(base)]);
    const handedIn: number[] = [];
    const dp = gatherOf(2, handedIn);
    for (let s = 0; s < 3; s++) await Promise.all(ranks.map((t, r) => t.step({ dataParallel: dp(r) })));
    expect(handedIn).toEqual([2, 2, 2, 2, 2, 2]); // each rank ran 2 of the 4 micro-batches, 3 steps
    const ref = bytesOf(one.trainStep.getParameters());
    expect(bytesOf(ranks[0]!.trainStep.getParameters())).toBe(ref);
    expect(bytesOf(ranks[1]!.trainStep.getParameters())).toBe(ref);
    for (const t of [one, ...ranks]) await t.close();
  });

  it('refuses micro-batches that do not split over the ranks', async () => {
    const t = await Trainer.create({ ...base, batchSize: 3, microBatchSize: 1 });
    const err = await t.step({ dataParallel: gatherOf(2)(0) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TrainInputError);
    expect((err as Error).message).toMatch(/3 micro-batches do not split over 2 ranks/);
    await t.close();
  });
});
