// The bench's children: one training step child per trial inside a memory cgroup, and the largest-batch search.
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { runInMemoryCgroup, type MemoryCgroupRun } from '@soup/cuda-probe';
import { MiB, round, type Mode } from './_numbers';

export interface ChildReport {
  mode: Mode;
  batchSize: number;
  /** Median of the child's timed steps. */
  stepMs: number;
  stepTimesMs: number[];
  stepCpuMs: number;
  losses: number[];
  peakRssMB: number;
  scratchFilesLeft: number;
  packedMB?: number;
  peakDiskMB?: number;
  packMs?: number;
  unpackMs?: number;
  forwardMs?: number;
  headMs?: number;
  backwardMs?: number;
  optimizerMs?: number;
}
export interface Trial {
  mode: Mode;
  batchSize: number;
  trained: boolean;
  /** `trained`, `oom-killed` (the kernel's OOM killer, counted in the cgroup) or what else ended it. */
  outcome: string;
  cgroupPeakMB: number | null;
  limitHits: number | null;
  oomKills: number | null;
  report: ChildReport | null;
  wallMs: number;
}

/** What every child of one bench run shares. */
export interface TrialConfig {
  /** The bench folder (capped-step.mjs lives there). */
  here: string;
  scratchRoot: string;
  spec: object;
  threads: number;
  /** Steps of a search child (after its warm-up). */
  steps: number;
  /** The batch the search starts from, the largest it tries, and its resolution. */
  B: number;
  maxBatch: number;
  resolution: number;
  log: (s: string) => void;
}

/** The trial runner of one bench run; `trials` lists every capped search and timing trial, in order. */
export function createCappedTrials(c: TrialConfig) {
  const { here, scratchRoot, spec, threads, steps, B, maxBatch, resolution, log } = c;
  const trials: Trial[] = [];
  async function runCapped(
    mode: Mode,
    batchSize: number,
    limitBytes: number,
    childSteps: number,
    watch?: (dir: string) => { signal: AbortSignal; onSpawn: (child: { pid: number | undefined }) => void },
  ): Promise<{ trial: Trial; dir: string }> {
    const dir = mkdtempSync(join(scratchRoot, 'soup-i15-child-'));
    const cfg = JSON.stringify({ mode, spec, batchSize, threads, steps: childSteps });
    let run: MemoryCgroupRun;
    try {
      run = await runInMemoryCgroup({
        file: process.execPath,
        args: [join(here, 'capped-step.mjs'), cfg],
        cwd: dir,
        limitBytes,
        timeoutMs: 300_000,
        namePrefix: 'soup-i15-bench',
        ...(watch ? watch(dir) : {}),
      });
    } catch (err) {
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
    const line = run.stdout.trim().split('\n').at(-1) ?? '';
    const report = run.exitCode === 0 && line.startsWith('{') ? (JSON.parse(line) as ChildReport) : null;
    const outcome = report
      ? 'trained'
      : run.cgroup.oomKilled
        ? 'oom-killed'
        : run.aborted
          ? 'killed by the bench'
          : `failed (${run.signal ?? `exit ${run.exitCode}`}): ${run.stderr.trim().split('\n').slice(-2).join(' | ')}`;
    const trial: Trial = {
      mode,
      batchSize,
      trained: report !== null,
      outcome,
      cgroupPeakMB: run.cgroup.peakBytes === null ? null : round(run.cgroup.peakBytes / MiB),
      limitHits: run.cgroup.limitHits,
      oomKills: run.cgroup.oomKills,
      report,
      wallMs: round(run.wallMs),
    };
    if (!watch) trials.push(trial);
    log(
      `  ${mode.padEnd(15)} batch ${String(batchSize).padStart(3)}: ${outcome}` +
        (trial.cgroupPeakMB !== null ? `, cgroup peak ${trial.cgroupPeakMB} MB` : '') +
        (report ? `, step ${round(report.stepMs)} ms, RSS peak ${round(report.peakRssMB)} MB` : '') +
        ` (${round(run.wallMs / 1000, 1)} s)`,
    );
    return { trial, dir };
  }

  async function trial(mode: Mode, batchSize: number, limitBytes: number, childSteps = steps): Promise<Trial> {
    const { trial: t, dir } = await runCapped(mode, batchSize, limitBytes, childSteps);
    rmSync(dir, { recursive: true, force: true });
    if (t.report && t.report.scratchFilesLeft !== 0)
      throw new Error(`${mode} batch ${batchSize}: ${t.report.scratchFilesLeft} scratch file(s) left after release`);
    return t;
  }

  /** Largest batch that trains under the cap: doubling from B, then bisection to `resolution`. */
  async function largestBatch(
    mode: Mode,
    limitBytes: number,
  ): Promise<{ batchSize: number; firstFailing: number | null }> {
    const memo = new Map<number, boolean>();
    const trains = async (b: number): Promise<boolean> => {
      if (!memo.has(b)) memo.set(b, (await trial(mode, b, limitBytes)).trained);
      return memo.get(b)!;
    };
    let lo = 0;
    let hi: number | null = null;
    if (await trains(B)) {
      lo = B;
      for (let b = 2 * B; b <= maxBatch; b *= 2) {
        if (await trains(b)) lo = b;
        else {
          hi = b;
          break;
        }
      }
      if (hi === null) return { batchSize: lo, firstFailing: null };
    } else hi = B;
    while (hi - lo > resolution) {
      const mid = Math.max(1, Math.round((lo + hi) / 2 / resolution) * resolution);
      if (mid <= lo || mid >= hi) break;
      if (await trains(mid)) lo = mid;
      else hi = mid;
    }
    return { batchSize: lo, firstFailing: hi };
  }

  return { trials, runCapped, trial, largestBatch };
}
