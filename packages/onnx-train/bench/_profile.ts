// Summarises an ORT profile (Chrome-trace JSON) of training steps: where the kernel time goes.
import { readFileSync } from 'node:fs';

interface TraceEvent {
  cat?: string;
  name: string;
  ts: number;
  dur: number;
  args?: { op_name?: string };
}

export interface ProfileSummary {
  /** Mean wall time of SequentialExecutor::Execute over the summarised runs. */
  runMs: number;
  /** Mean summed kernel time. */
  kernelMs: number;
  /** Kernel ms per region: forward, backward (incl. recompute), optimizer (grad norm + AdamW). */
  byRegion: Record<string, number>;
  /** Kernel ms per operator type, largest first. */
  byOp: Record<string, number>;
  /** Share of kernel time in matrix products (Gemm, MatMul, FusedMatMul). */
  matmulShare: number;
}

/** Averages the last `lastRuns` runs of a profile. */
export function summarizeProfile(path: string, lastRuns: number): ProfileSummary {
  const events = JSON.parse(readFileSync(path, 'utf8')) as TraceEvent[];
  const runs = events.filter((e) => e.name === 'SequentialExecutor::Execute');
  const used = runs.slice(-lastRuns);
  const from = used[0]?.ts ?? 0;
  const nodes = events.filter((e) => e.cat === 'Node' && e.name.endsWith('_kernel_time') && e.ts >= from);
  const n = Math.max(1, used.length);
  const byRegion: Record<string, number> = {};
  const byOp: Record<string, number> = {};
  let kernel = 0;
  let matmul = 0;
  for (const e of nodes) {
    const ms = e.dur / 1000 / n;
    const region = e.name.startsWith('optimizer')
      ? 'optimizer'
      : e.name.includes('/bwd')
        ? 'backward'
        : e.name.includes('/fwd')
          ? 'forward'
          : 'other';
    const op = e.args?.op_name ?? '?';
    byRegion[region] = (byRegion[region] ?? 0) + ms;
    byOp[op] = (byOp[op] ?? 0) + ms;
    kernel += ms;
    if (/^(Gemm|MatMul|FusedMatMul)$/.test(op)) matmul += ms;
  }
  const round = (x: number): number => Math.round(x * 100) / 100;
  const sorted = Object.entries(byOp).sort((a, b) => b[1] - a[1]);
  return {
    runMs: round(used.reduce((s, r) => s + r.dur, 0) / 1000 / n),
    kernelMs: round(kernel),
    byRegion: Object.fromEntries(Object.entries(byRegion).map(([k, v]) => [k, round(v)])),
    byOp: Object.fromEntries(sorted.slice(0, 12).map(([k, v]) => [k, round(v)])),
    matmulShare: round(matmul / Math.max(kernel, 1e-9)),
  };
}
