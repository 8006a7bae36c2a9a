import { planCheckpoint, resolveGranularity, type Granularity } from '@soup/grad-ckpt';

const g: Granularity | null = resolveGranularity('auto', 16);
const names: string[] = planCheckpoint(['h.0', 'h.1'], g ?? 'full');
// @ts-expect-error module names are strings
planCheckpoint([0, 1], 'full');
export { names };
