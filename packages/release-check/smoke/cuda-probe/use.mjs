// Installed alone, WITHOUT its optional peers (onnxruntime-node, @soup/onnx-train): OOM text is
// classified, a command probe runs real child processes, and the ORT probes refuse with the install command.
import { existsSync } from 'node:fs';
import {
  classifyOutOfMemory,
  createCommandProbe,
  createOrtProbe,
  createTrainStepProbe,
  PeerDependencyMissingError,
} from '@soup/cuda-probe';

const check = (cond, what) => {
  if (!cond) throw new Error(what);
};
check(!existsSync('node_modules/onnxruntime-node'), 'onnxruntime-node must not be installed with @soup/cuda-probe');
check(!existsSync('node_modules/@soup/onnx-train'), '@soup/onnx-train must not be installed with @soup/cuda-probe');
check(
  classifyOutOfMemory('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB').oom,
  'CUDA OOM text',
);
check(!classifyOutOfMemory('CUDA error: an illegal memory access was encountered').oom, 'illegal address is not OOM');
const cmd = createCommandProbe({
  command: `${process.execPath} -e "process.exit({batch_size} > 4 ? 3 : 0)"`,
  timeoutMs: 30_000,
});
check((await cmd(2)).fits === true, 'command probe at 2');
let propagated = false;
try {
  await cmd(8);
} catch {
  propagated = true;
}
check(propagated, 'a non-OOM failure must propagate');
for (const [name, make] of [
  [
    'createTrainStepProbe',
    () => createTrainStepProbe({ spec: { vocabSize: 256, seqLen: 16, dModel: 32, nHeads: 2, nLayers: 1 } }),
  ],
  ['createOrtProbe', () => createOrtProbe({ model: 'model.onnx', maxLength: 16 })],
]) {
  let err = null;
  try {
    make();
  } catch (e) {
    err = e;
  }
  check(err instanceof PeerDependencyMissingError, `${name} without onnxruntime-node: ${err}`);
  check(
    err.code === 'SOUP_PEER_DEPENDENCY_MISSING' && err.message.includes('npm install onnxruntime-node@1.30.0'),
    `${name}: ${err.message}`,
  );
}
console.log('SMOKE OK');
