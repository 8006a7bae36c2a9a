// Tests' trainer-probe options: the CPU, no budget, a 60 s trial limit, the cache in `cwd` (its env as given).
import { join } from 'node:path';
import type { TrainerProbeOptions } from './trainer-probe';

export function cpuTrainerOptions(cwd: string, env: NodeJS.ProcessEnv = {}): TrainerProbeOptions {
  return {
    env: { PATH: process.env.PATH, HOME: cwd, SOUP_BATCH_CACHE_PATH: join(cwd, 'cache.json'), ...env },
    cwd,
    signal: new AbortController().signal,
    identity: { device: 'cpu', gpuName: 'cpu', gpuMemoryGb: 23 },
    deviceId: 0,
    budgetBytes: null,
    timeoutMs: 60_000,
    maxLength: 512,
    quantization: 'none',
    loraR: 0,
  };
}
