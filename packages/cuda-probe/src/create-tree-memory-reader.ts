// The memory of a whole process tree right now: on the CPU the sum of its processes' resident
// memory (VmRSS), on CUDA the GPU memory nvidia-smi attributes to the tree's pids on the device.
// A reading is a sample: a spike shorter than the interval between two readings is not seen.
import { queryComputeApps, queryGpus, visibleGpu } from './_nvidia-smi';
import { readProcStatus } from './_proc';
import { treePids } from './_tree-pids';

/** Options of {@link createTreeMemoryReader}. */
export interface TreeMemoryReaderOptions {
  /** @default 'cpu' */
  device?: 'cpu' | 'cuda';
  /** CUDA's device index under `env`'s CUDA_VISIBLE_DEVICES. @default 0 */
  deviceId?: number;
  /** @default process.env */
  env?: NodeJS.ProcessEnv;
  /** @default 'nvidia-smi' */
  nvidiaSmiPath?: string;
  /** @default '/proc' */
  procRoot?: string;
}

/** One reading of a tree's memory. */
export interface TreeMemoryReading {
  bytes: number;
  /** How many processes the tree had. */
  processes: number;
}

/** Reads a process tree's memory (see the file comment). */
export interface TreeMemoryReader {
  /**
   * `tree-rss`: sum of VmRSS over the tree; `cuda-per-process`: nvidia-smi's used memory of the tree's pids on the
   * device.
   */
  readonly method: 'tree-rss' | 'cuda-per-process';
  /** The tree of `pid` now; null when it cannot be read (gone, no /proc, nvidia-smi cannot answer). */
  read(pid: number): Promise<TreeMemoryReading | null>;
}

export function createTreeMemoryReader(o: TreeMemoryReaderOptions = {}): TreeMemoryReader {
  const procRoot = o.procRoot ?? '/proc';
  if ((o.device ?? 'cpu') === 'cuda') {
    const smi = o.nvidiaSmiPath ?? 'nvidia-smi';
    return {
      method: 'cuda-per-process',
      async read(pid) {
        const gpus = await queryGpus(smi);
        if (!gpus.ok) return null;
        const gpu = visibleGpu(gpus.value, o.deviceId ?? 0, o.env ?? process.env);
        if (!gpu.ok) return null;
        const apps = await queryComputeApps(smi);
        if (!apps.ok) return null;
        const pids = treePids(pid);
        const mine = apps.value.filter((a) => pids.has(a.pid) && a.gpuUuid === gpu.value.uuid);
        if (mine.some((a) => a.usedBytes === null)) return null;
        return { bytes: mine.reduce((s, a) => s + (a.usedBytes ?? 0), 0), processes: pids.size };
      },
    };
  }
  return {
    method: 'tree-rss',
    async read(pid) {
      const pids = treePids(pid);
      let bytes = 0;
      let seen = 0;
      for (const p of pids) {
        const s = readProcStatus(p, procRoot);
        if (s === null) continue;
        bytes += s.vmRssBytes;
        seen += 1;
      }
      return seen === 0 ? null : { bytes, processes: seen };
    },
  };
}
