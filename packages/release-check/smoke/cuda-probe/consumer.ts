import type { ProbeFn } from '@soup/batch-probe';
import { createCommandProbe, deviceIdentity, type DeviceIdentity } from '@soup/cuda-probe';

const probe: ProbeFn = createCommandProbe({ command: 'node train.js --bs {batch_size}' });
export async function id(): Promise<DeviceIdentity> {
  return deviceIdentity();
}
// @ts-expect-error the command is required
createCommandProbe({});
export { probe };
