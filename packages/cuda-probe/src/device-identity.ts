import { DeviceQueryError } from './errors';
import { queryGpus, visibleGpu } from './_nvidia-smi';
import { readMeminfo } from './_proc';

/** Options of {@link deviceIdentity}. */
export interface DeviceIdentityOptions {
  /**
   * `cuda` asks nvidia-smi (and throws when it cannot answer), `cpu` reads /proc/meminfo,
   * `auto` uses the GPU when nvidia-smi answers and the CPU otherwise.
   * @default 'auto'
   */
  device?: 'auto' | 'cpu' | 'cuda';
  /**
   * CUDA device index, as the trainer sees it: under `CUDA_VISIBLE_DEVICES` (of `env`) it is
   * mapped by UUID to the GPU nvidia-smi lists.
   * @default 0
   */
  deviceId?: number;
  /**
   * Environment whose `CUDA_VISIBLE_DEVICES` maps `deviceId` to a physical GPU.
   * @default process.env
   */
  env?: NodeJS.ProcessEnv;
  /**
   * The nvidia-smi executable.
   * @default 'nvidia-smi'
   */
  nvidiaSmiPath?: string;
  /**
   * Root of the proc filesystem, for the CPU identity.
   * @default '/proc'
   */
  procRoot?: string;
}

/** The device part of a batch-cache key. */
export interface DeviceIdentity {
  /** Which device was identified. */
  device: 'cuda' | 'cpu';
  /** The GPU's name as the driver reports it (`NVIDIA H100 80GB HBM3`), or `cpu`. */
  gpuName: string;
  /** Whole GiB (rounded down) of the GPU's memory, or of the host's RAM for `cpu`. */
  gpuMemoryGb: number;
  /** `cuda`: the GPU's UUID and nvidia-smi index (which physical GPU `deviceId` is). */
  gpuUuid?: string;
  gpuIndex?: number;
}

const GiB = 2 ** 30;

/**
 * Identifies the device for batch-cache keys: the GPU's name and its memory in whole GiB, or
 * `cpu` and the host RAM in whole GiB (`cpu` / 23 on a 24 GB machine whose MemTotal is 23.5 GiB).
 *
 * @throws {DeviceQueryError} `device: 'cuda'` and nvidia-smi cannot answer, or `cpu` and
 *   /proc/meminfo is unreadable
 */
export async function deviceIdentity(options: DeviceIdentityOptions = {}): Promise<DeviceIdentity> {
  const device = options.device ?? 'auto';
  const deviceId = options.deviceId ?? 0;
  if (device !== 'cpu') {
    const gpus = await queryGpus(options.nvidiaSmiPath ?? 'nvidia-smi');
    const found = gpus.ok ? visibleGpu(gpus.value, deviceId, options.env ?? process.env) : gpus;
    if (found.ok) {
      const gpu = found.value;
      return {
        device: 'cuda',
        gpuName: gpu.name,
        gpuMemoryGb: Math.floor(gpu.totalBytes / GiB),
        gpuUuid: gpu.uuid,
        gpuIndex: gpu.index,
      };
    }
    if (device === 'cuda') {
      throw new DeviceQueryError(
        `cannot identify CUDA device ${deviceId}: ${found.why}; ` +
          'install the NVIDIA driver (nvidia-smi) or use device: "cpu"',
      );
    }
  }
  const meminfo = readMeminfo(options.procRoot ?? '/proc');
  if (!meminfo) throw new DeviceQueryError('cannot identify the CPU device: /proc/meminfo is unreadable');
  return { device: 'cpu', gpuName: 'cpu', gpuMemoryGb: Math.floor(meminfo.totalBytes / GiB) };
}
