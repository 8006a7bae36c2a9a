// A training step for the memory-cgroup acceptance test: fused, or segmented with its saved
// activations in scratch files under the working directory. Prints one JSON line with the loss of
// every step. Plain JavaScript so that no TypeScript loader runs inside the cgroup.
import { readdirSync } from 'node:fs';
import { createTrainStep, defineGptSpec, makeSyntheticBatch } from '@soup/onnx-train';

const cfg = JSON.parse(process.argv[2]);
const spec = defineGptSpec(cfg.spec);
const step = await createTrainStep({
  spec,
  seed: 0,
  intraOpNumThreads: 1,
  execution: cfg.mode === 'fused' ? 'fused' : 'segmented',
  ...(cfg.mode === 'disk' ? { offload: { target: 'disk', saveDir: '.soup-acts' } } : {}),
});
const batch = makeSyntheticBatch({ spec, batchSize: cfg.batchSize, seed: 1 });
const losses = [];
for (let i = 0; i < cfg.steps; i++) losses.push((await step.run(batch)).loss);
await step.release();
let scratchFilesLeft = 0;
try {
  scratchFilesLeft = readdirSync('.soup-acts').length;
} catch {
  // no save dir (fused)
}
console.log(JSON.stringify({ losses, scratchFilesLeft }));
