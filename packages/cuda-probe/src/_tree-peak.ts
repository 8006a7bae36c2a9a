// The peak memory of a trial's whole process tree, from readings of /proc: the largest sum of VmRSS
// over the tree at one reading, or a single process's VmHWM where that is larger (the kernel keeps a
// lone process's high-water mark, so its spike between two readings is not lost). A launcher's
// workers, a `bash -c` wrapper's trainer, a data loader's children all count.
import { readProcStatus } from './_proc';
import { treePids } from './_tree-pids';

/** Samples one tree; read `peakBytes` and `processes` after the last {@link TreePeak.sample}. */
export interface TreePeak {
  /** Reads the tree now (every process of it, found again at each reading). */
  sample(): void;
  /** The peak so far; null before any process could be read. */
  readonly peakBytes: number | null;
  /** The most processes one reading found alive in the tree. */
  readonly processes: number;
  /** Every pid seen in the tree (for the kernel log's OOM records). */
  readonly pids: Set<number>;
}

export function createTreePeak(root: number): TreePeak {
  let peakBytes: number | null = null;
  let processes = 0;
  const pids = new Set<number>([root]);
  return {
    sample() {
      let sum = 0;
      let alive = 0;
      let hwm = 0;
      for (const p of treePids(root)) {
        pids.add(p);
        const st = readProcStatus(p);
        if (st === null) continue; // gone, or a zombie
        sum += st.vmRssBytes;
        hwm = Math.max(hwm, st.vmHwmBytes);
        alive += 1;
      }
      if (alive === 0) return;
      processes = Math.max(processes, alive);
      const now = Math.max(sum, hwm);
      if (peakBytes === null || now > peakBytes) peakBytes = now;
    },
    get peakBytes() {
      return peakBytes;
    },
    get processes() {
      return processes;
    },
    pids,
  };
}
