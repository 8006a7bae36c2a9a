// A session's memory watch over the trainer's process tree, and the budget it holds the trainer to.
import { formatBytes } from '@soup/batch-probe';
import { parseBytes } from '@soup/config';
import { createTreeMemoryReader, reachableMemory } from '@soup/cuda-probe';
import {
  maxMemoryBytesOf,
  memoryReportOf,
  resolveMemoryBudget,
  type BudgetSource,
  type MemoryWatchOptions,
  type ResolveMemoryBudgetOptions,
  type SessionMemory,
  type SessionPeakReport,
} from '@soup/supervisor';

/** What {@link SessionMemoryWatch.hold} is given: the budget's sources, --max-memory, and how to give a budget. */
export type MemoryHoldOptions = Omit<ResolveMemoryBudgetOptions, 'reachableBytes'> & {
  maxMemory: string | undefined;
  hint: string;
};

/** The supervisor's memory watch over the trainer's tree, and the budget it is held to once that is known. */
export interface SessionMemoryWatch {
  watch: MemoryWatchOptions;
  /** Sets the budget (given, else reachable, else the GPU's) and --max-memory inside it (`hint`: how to give one). */
  hold(p: MemoryHoldOptions): Promise<void>;
  /** The result's `memory` from the supervisor's reading. */
  report(m: SessionMemory | null): SessionPeakReport | null;
}

/** The reading is @soup/cuda-probe's: sum of RSS on the CPU, nvidia-smi per process on CUDA. */
export function sessionMemoryWatch(p: {
  device: { kind: 'cpu' | 'cuda'; id: number };
  env: Record<string, string | undefined>;
}): SessionMemoryWatch {
  const { device } = p;
  const reader = createTreeMemoryReader({ device: device.kind, deviceId: device.id, env: p.env });
  const watch: MemoryWatchOptions = {
    read: (pid) => reader.read(pid),
    method: reader.method,
    budgetBytes: null,
    maxMemoryBytes: null,
    formatBytes,
  };
  let source: BudgetSource | null = null;
  return {
    watch,
    async hold(h) {
      const b = await resolveMemoryBudget({ ...h, reachableBytes: () => reachableMemory().bytes });
      watch.maxMemoryBytes = maxMemoryBytesOf(h.maxMemory, b.budgetBytes, h.hint, parseBytes);
      [watch.budgetBytes, source] = [b.budgetBytes, b.source];
    },
    report: (m) => memoryReportOf(m, source),
  };
}
