// The bench's human view: the table and lines printed after the JSON result is written.
import { MODES, type Mode } from './_numbers';

interface Spread {
  median: number | null;
  min: number | null;
  max: number | null;
}

/** The parts of the bench result the human view prints. */
export interface PrintedResult {
  cgroup: { version: number; capMB: number; capRule: string };
  loadAverage: { before: number[]; after: number[] };
  fusedMaxBatch: number;
  modes: Record<Mode, { maxBatch: number; cgroupPeakMBAtMax: number | null; atFusedMax: object }>;
  oomRetries: { round: number; mode: Mode }[];
  rounds: { round: number; order: Mode[]; keepSlowdownVsFused: number | null; diskSlowdownVsFused: number | null }[];
  slowdownSpread: { keep: Spread; disk: Spread };
  goals: Record<string, { target: string; value: unknown; met: boolean }>;
  keepCpuRatioVsFused: number | null;
  diskCpuRatioVsFused: number | null;
  diskAtMaxBatch: unknown;
  sigkill: { batchSize: number; filesAtKill: number; leftAfterKill: number; leftAfterSweep: number };
  wallSeconds: number;
}

/** Prints the cap, the per-mode table, every round, the goals and the SIGKILL check. */
export function printSummary(r: PrintedResult): void {
  const F = r.fusedMaxBatch;
  const { keep, disk } = r.slowdownSpread;
  const kill = r.sigkill;
  console.log(`cap ${r.cgroup.capMB} MiB (cgroup v${r.cgroup.version}): ${r.cgroup.capRule}`);
  console.log(`load average before ${r.loadAverage.before.join(' ')}, after ${r.loadAverage.after.join(' ')}`);
  console.log(
    `${'mode'.padEnd(16)} ${'max batch'.padStart(9)} ${`step ms @${F}`.padStart(11)} ${'per round'.padStart(18)} ` +
      `${`cgroup MB @${F}`.padStart(13)} ${'cgroup MB @max'.padStart(14)}`,
  );
  for (const m of MODES) {
    const x = r.modes[m];
    const a = x.atFusedMax as { stepMs?: number; stepMsPerRound?: number[]; cgroupPeakMB?: number | null };
    console.log(
      `${m.padEnd(16)} ${String(x.maxBatch).padStart(9)} ${String(a.stepMs ?? 'n/a').padStart(11)} ` +
        `${(a.stepMsPerRound ?? []).join(', ').padStart(18)} ${String(a.cgroupPeakMB ?? 'n/a').padStart(13)} ` +
        `${String(x.cgroupPeakMBAtMax ?? 'n/a').padStart(14)}`,
    );
  }
  if (r.oomRetries.length)
    console.log(
      `timing children OOM-killed at batch ${F} and run once more: ` +
        `${r.oomRetries.map((o) => `round ${o.round} ${o.mode}`).join(', ')}`,
    );
  for (const x of r.rounds)
    console.log(
      `round ${x.round} (${x.order.join(' → ')}): keep / fused ${x.keepSlowdownVsFused}, disk / fused ` +
        `${x.diskSlowdownVsFused}`,
    );
  console.log(
    `keep / fused: median ${keep.median}, spread ${keep.min}–${keep.max}; disk / fused: median ` +
      `${disk.median}, spread ${disk.min}–${disk.max}`,
  );
  for (const [k, g] of Object.entries(r.goals))
    console.log(`goal ${k} ${g.target}: ${g.value} — ${g.met ? 'met' : 'NOT met'}`);
  console.log(
    `step CPU time (all threads) at batch ${F}: keep / fused ${r.keepCpuRatioVsFused}, disk / fused ` +
      `${r.diskCpuRatioVsFused}`,
  );
  console.log(`disk step at its largest batch (page cache evicted under the cap): ${JSON.stringify(r.diskAtMaxBatch)}`);
  console.log(
    `SIGKILL at batch ${kill.batchSize}: the child held ${kill.filesAtKill} scratch files at the kill; ` +
      `${kill.leftAfterKill} left after it, ${kill.leftAfterSweep} after the next store's sweep`,
  );
  console.log(`bench wall time ${r.wallSeconds} s`);
}
