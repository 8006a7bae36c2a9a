import { defineGptSpec, TrainStep, type GptSpec, type StepResult } from '@soup/onnx-train';

const spec: GptSpec = defineGptSpec({ vocabSize: 256, seqLen: 8, dModel: 16, nHeads: 2, nLayers: 1 });
export async function once(): Promise<number> {
  const step = await TrainStep.create({ spec });
  const r: StepResult = await step.run({ inputIds: new BigInt64Array(8), labels: new BigInt64Array(8), batchSize: 1 });
  return r.loss;
}
// @ts-expect-error nLayers is required
defineGptSpec({ vocabSize: 256, seqLen: 8, dModel: 16, nHeads: 2 });
