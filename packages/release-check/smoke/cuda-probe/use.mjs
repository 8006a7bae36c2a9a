// Installed alone: the worker shipped in dist runs a real onnx-train step in a child; OOM text is classified.
import { classifyOutOfMemory, createCommandProbe, createTrainStepProbe } from '@soup/cuda-probe';

const check = (cond, what) => { if (!cond) throw new Error(what); };
check(classifyOutOfMemory('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB').oom, 'CUDA OOM text');
check(!classifyOutOfMemory('CUDA error: an illegal memory access was encountered').oom, 'illegal address is not OOM');
const probe = createTrainStepProbe({ spec: { vocabSize: 256, seqLen: 16, dModel: 32, nHeads: 2, nLayers: 1 }, budgetBytes: 256 * 2 ** 20, timeoutMs: 60_000 });
const outcome = await probe(2);
check(outcome.fits === true && outcome.peakBytes > 0, `train-step probe: ${JSON.stringify(outcome)}`);
const cmd = createCommandProbe({ command: `${process.execPath} -e "process.exit({batch_size} > 4 ? 3 : 0)"`, timeoutMs: 30_000 });
check((await cmd(2)).fits === true, 'command probe at 2');
let propagated = false;
try { await cmd(8); } catch { propagated = true; }
check(propagated, 'a non-OOM failure must propagate');
console.log('SMOKE OK');
