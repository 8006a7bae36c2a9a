// Installed alone: build and run a 1-layer training step on onnxruntime-node's CPU binaries; the loss falls.
import { defineGptSpec, makeSyntheticBatch, TrainStep, writeTrainingModel } from '@soup/onnx-train';
import { statSync } from 'node:fs';

const check = (cond, what) => {
  if (!cond) throw new Error(what);
};
const spec = defineGptSpec({ vocabSize: 256, seqLen: 16, dModel: 32, nHeads: 2, nLayers: 1 });
const step = await TrainStep.create({ spec, seed: 1, intraOpNumThreads: 1 });
const batch = makeSyntheticBatch({ spec, batchSize: 2, seed: 3 });
const losses = [];
for (let i = 0; i < 12; i++) losses.push((await step.run(batch, { lr: 1e-2 })).loss);
await step.release();
check(losses.every(Number.isFinite), `non-finite loss: ${losses}`);
check(losses.at(-1) < losses[0] * 0.9, `loss did not fall: ${losses[0]} -> ${losses.at(-1)}`);
await writeTrainingModel(spec, 'step.onnx');
check(statSync('step.onnx').size > 1000, 'model file written');
console.log('SMOKE OK');
