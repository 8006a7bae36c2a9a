// @soup/cuda-probe WITH its optional peers installed: the worker shipped in dist runs a real onnx-train step in a
// child.
import { createTrainStepProbe } from '@soup/cuda-probe';

const probe = createTrainStepProbe({
  spec: { vocabSize: 256, seqLen: 16, dModel: 32, nHeads: 2, nLayers: 1 },
  budgetBytes: 256 * 2 ** 20,
  timeoutMs: 60_000,
});
const outcome = await probe(2);
if (!(outcome.fits === true && outcome.peakBytes > 0)) throw new Error(`train-step probe: ${JSON.stringify(outcome)}`);
console.log('SMOKE OK');
