import type { ProbeFn } from '@soup/batch-probe';
import { createCommandProbe, deviceIdentity, type DeviceIdentity } from '@soup/cuda-probe';

const probe: ProbeFn = createCommandProbe({ command: 'node train.js --bs {batch_size}' });
export async function id(): Promise<DeviceIdentity> {
  return deviceIdentity();
}
// @ts-expect-error the command is required
createCommandProbe({});
export { probe };
// The train-step probe's types need no optional peer installed.
import { createTrainStepProbe, PeerDependencyMissingError, type ProbeGptSpec } from '@soup/cuda-probe';
const spec: ProbeGptSpec = { vocabSize: 256, seqLen: 16, dModel: 32, nHeads: 2, nLayers: 1 };
export const trainStep = (): ProbeFn => createTrainStepProbe({ spec });
export const missing = (e: unknown): string[] => (e instanceof PeerDependencyMissingError ? e.packages : []);
