// How the worker probe runs its children: one trial's child (under a memory cgroup when asked), a warm spare
// spawned ahead for the next trial.
import { type ChildRun, runChild } from './_child-runner';
import type { Launch } from './_launch';
import type { WorkerJob, WorkerResult } from './_protocol';
import { runInMemoryCgroup } from './run-in-memory-cgroup';
import type { MemoryCgroupReport } from './types';
import type { WorkerProbeConfig } from './_worker-config';

/**
 * A trial ends when the child closes its result channel after a successful step (the child is
 * then killed instead of tearing its runtime down); `SOUP_PROBE_END_ON_RESULT=0` waits for the
 * exit as before (for comparison). The next trial still starts only once that child is gone
 * (a killed process exits in a few milliseconds, while the search picks the next size).
 */
function endsOnResult(cfg: WorkerProbeConfig): boolean {
  // CPU only: a CUDA child's device memory must be gone before the next trial reads what is free.
  return cfg.device === 'cpu' && (cfg.env.SOUP_PROBE_END_ON_RESULT ?? process.env.SOUP_PROBE_END_ON_RESULT) !== '0';
}

export function send(cfg: WorkerProbeConfig, launch: Launch, job: WorkerJob): Promise<ChildRun> {
  return runChild({
    launch,
    env: cfg.env,
    cwd: cfg.cwd,
    timeoutMs: cfg.timeoutMs,
    input: JSON.stringify(job),
    resultChannel: true,
    endOnResult: job.mode === 'step' && endsOnResult(cfg),
    ...(cfg.signal ? { signal: cfg.signal } : {}),
  });
}

/** The memory cgroup limit of a trial: what the child holds before the step + the batch's feeds + the budget. */
export function memoryCgroupLimitBytes(p: {
  baselineRssBytes: number;
  feedBytes: number;
  budgetBytes: number;
}): number {
  return Math.ceil((p.baselineRssBytes + p.feedBytes + p.budgetBytes) / 4096) * 4096;
}

/** {@link send} inside a fresh memory cgroup (removed afterwards). */
export async function sendCapped(
  cfg: WorkerProbeConfig,
  launch: Launch,
  job: WorkerJob,
  limitBytes: number,
): Promise<{ run: ChildRun; report: MemoryCgroupReport }> {
  const r = await runInMemoryCgroup({
    file: launch.file,
    args: launch.args,
    env: cfg.env,
    ...(cfg.cwd ? { cwd: cfg.cwd } : {}),
    timeoutMs: cfg.timeoutMs,
    input: JSON.stringify(job),
    resultChannel: true,
    limitBytes,
    namePrefix: 'soup-probe',
    ...(cfg.signal ? { signal: cfg.signal } : {}),
  });
  const { cgroup, ...rest } = r;
  return {
    run: { ...rest, pid: undefined, sampledPeakRssBytes: null, killedAboveRss: false },
    report: {
      limitBytes: cgroup.limitBytes,
      peakBytes: cgroup.peakBytes,
      oomKills: cgroup.oomKills,
      limitHits: cgroup.limitHits,
      oomKilled: cgroup.oomKilled,
    },
  };
}

export function asResult(run: ChildRun): WorkerResult | undefined {
  const r = run.result as WorkerResult | undefined;
  return r && typeof r === 'object' && typeof r.ok === 'boolean' ? r : undefined;
}

/** A warm child: spawned ahead, runtime imported and session created, waiting for its batch size. */
export interface Spare {
  pid: number | undefined;
  /** Hands the spare its trial (the batch size), or drops it (null). */
  release: (rest: string | null) => void;
  done: Promise<ChildRun>;
  key: string;
}

export function startSpare(cfg: WorkerProbeConfig, launch: Launch, job: WorkerJob): Spare {
  let release!: (rest: string | null) => void;
  const gate = new Promise<string | null>((r) => (release = r));
  let pid: number | undefined;
  const done = runChild({
    launch,
    env: { ...cfg.env, SOUP_PROBE_WARM: '1' },
    cwd: cfg.cwd,
    timeoutMs: cfg.timeoutMs,
    input: `${JSON.stringify(job)}\n`,
    resultChannel: true,
    endOnResult: endsOnResult(cfg),
    gate,
    onSpawn: (p) => (pid = p),
    ...(cfg.signal ? { signal: cfg.signal } : {}),
  });
  done.catch(() => undefined);
  return { pid, release, done, key: JSON.stringify(job) };
}
