// `soup probe --exec … --try NAME=v1,v2`: the fastest configuration that fits, measured. Each
// candidate (one value per lever) gets its micro-batch m (the largest divisor of G / N that fits,
// the batch cache first), then its step time at m from the trainer's own runs: the command with
// {probe_steps} = 1, 1 + K and 1 + 2K, so start-up costs cancel. Samples/s at G = G / (a × step).
import { chooseConfiguration, formatMicroBatch, lookupTuneEntry, makeTuneKey, saveTuneEntry, type MeasuredCandidate, type TuneEntry, type TuneRow } from '@soup/batch-probe';
import { splitCommand } from '@soup/cuda-probe';
import { spawn } from 'node:child_process';
import type { CommandContext } from './_context';
import { renderTable } from './_table';
import { UsageError } from './errors';
import { formatBytes } from './format-bytes';

/** Placeholders soup fills itself: not a lever's name. */
const RESERVED = new Set(['batch_size', 'micro_batch_size', 'grad_accum', 'probe_steps', 'output_dir', 'resume_from', 'world_size']);

/** `--try NAME=v1,v2` values, in order; every NAME must appear as {NAME} in the command. */
export function parseTries(values: readonly string[], command: string): Record<string, string[]> {
  const tries: Record<string, string[]> = Object.create(null) as Record<string, string[]>;
  for (const v of values) {
    const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.+)$/.exec(v);
    if (!m) throw new UsageError(`--try ${JSON.stringify(v)}: expected NAME=v1,v2,… (e.g. --try grad_ckpt=true,false)`);
    const [, name, list] = m as unknown as [string, string, string];
    if (RESERVED.has(name)) throw new UsageError(`--try ${name}: {${name}} is filled by soup itself; name the trainer's own lever (e.g. grad_ckpt)`);
    if (tries[name]) throw new UsageError(`--try ${name} given twice: list every value once, e.g. --try ${name}=a,b`);
    const vals = list.split(',');
    if (vals.some((x) => x === '') || new Set(vals).size !== vals.length) throw new UsageError(`--try ${v}: values must be non-empty and distinct`);
    if (!command.includes(`{${name}}`)) throw new UsageError(`--try ${name}: the command has no {${name}} to fill; put it where the trainer takes that setting`);
    tries[name] = vals;
  }
  return tries;
}

/** Every combination of one value per lever, in the order given (the first lever varies slowest). */
export function candidatesOf(tries: Record<string, string[]>): Record<string, string>[] {
  let out: Record<string, string>[] = [{}];
  for (const [name, vals] of Object.entries(tries)) out = out.flatMap((c) => vals.map((v) => ({ ...c, [name]: v })));
  return out;
}

export function fillLevers(command: string, values: Record<string, string>): string {
  return Object.entries(values).reduce((c, [k, v]) => c.replaceAll(`{${k}}`, v), command);
}

const labelOf = (values: Record<string, string>): string => Object.entries(values).map(([k, v]) => `${k}=${v}`).join(', ');

/** What the fit search answered for one candidate. */
export type FitAnswer = { batchSize: number; peakBytes: number | null; source: string } | { batchSize: null; why: string };

export interface TuneExecOptions {
  ctx: CommandContext;
  /** The command as typed (levers and {probe_steps} unfilled). */
  command: string;
  tries: Record<string, string[]>;
  globalBatchSize: number;
  worldSize: number;
  timeSteps: number;
  budgetBytes: number | null;
  gpuName: string;
  gpuMemoryGb: number;
  timeoutMs: number;
  refresh: boolean;
  noCache: boolean;
  /** m for a candidate's command (levers filled; {probe_steps} still in): the micro-batch probe. */
  fit(command: string): Promise<FitAnswer>;
}

/** Wall time of one run of `argv` (no shell), or why it failed. */
async function timeRun(argv: string[], ctx: CommandContext, timeoutMs: number): Promise<{ ms: number } | { error: string }> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const child = spawn(argv[0]!, argv.slice(1), { cwd: ctx.cwd, env: ctx.env, stdio: ['ignore', 'ignore', 'pipe'] });
    let tail = '';
    child.stderr!.on('data', (d: Buffer) => (tail = (tail + d.toString('utf8')).slice(-2000)));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    const onAbort = (): void => void child.kill('SIGTERM');
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ error: err.message });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      ctx.signal.removeEventListener('abort', onAbort);
      const ms = performance.now() - t0;
      if (code === 0) resolve({ ms });
      else resolve({ error: `${signal ? `killed by ${signal}` : `exit code ${code}`}${tail.trim() ? `: ${tail.trim().split('\n').pop()}` : ''}` });
    });
  });
}

/**
 * Step time = the least-squares slope of a run's wall time against its number of steps (start-up
 * costs are the intercept); noise = the slope's standard error (null with two points).
 */
export function slope(points: Map<number, number>): { stepMs: number; noiseMs: number | null } {
  const xs = [...points.keys()];
  const ys = xs.map((x) => points.get(x)!);
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  const sxx = xs.reduce((a, x) => a + (x - mx) ** 2, 0);
  const b = xs.reduce((a, x, i) => a + (x - mx) * (ys[i]! - my), 0) / sxx;
  if (n < 3) return { stepMs: b, noiseMs: null };
  const rss = xs.reduce((a, x, i) => a + (ys[i]! - (my + b * (x - mx))) ** 2, 0);
  return { stepMs: b, noiseMs: Math.sqrt(rss / (n - 2) / sxx) };
}

/**
 * Runs the tuner and prints its table; returns the entry (also cached unless --no-cache).
 * Timing order: largest m first. A candidate's first estimate (1 and 1 + K steps) is compared with
 * the best full estimate so far: if even 2× the noise seen there cannot lift it to the best, its
 * third run is skipped ("cannot win").
 */
export async function tuneExec(o: TuneExecOptions): Promise<TuneEntry> {
  const { ctx } = o;
  const G = o.globalBatchSize;
  const N = o.worldSize;
  const perRank = G / N;
  const key = makeTuneKey({ command: o.command, tries: o.tries, globalBatchSize: G, worldSize: N, budgetBytes: o.budgetBytes, gpuName: o.gpuName, gpuMemoryGb: o.gpuMemoryGb });
  const location = { env: ctx.env, cwd: ctx.cwd };
  if (!o.noCache && !o.refresh) {
    const hit = lookupTuneEntry(key, location);
    if (hit) {
      ctx.say(`from the tune cache (measured ${hit.savedAt.replace(/\.\d+Z$/, 'Z')}, K = ${hit.timeSteps}; --refresh to measure again):`);
      printTable(ctx, hit);
      ctx.emit({ tune: hit, source: 'cache', key });
      return hit;
    }
  }
  const candidates = candidatesOf(o.tries);
  ctx.say(`tuning ${candidates.length} configurations at global batch ${G}${N > 1 ? ` (world size ${N})` : ''}: the largest micro-batch each fits, then its step time from runs of 1, ${1 + o.timeSteps} and ${1 + 2 * o.timeSteps} steps`);
  const t0 = performance.now();
  const rows: TuneRow[] = [];
  for (const values of candidates) {
    const cmd = fillLevers(o.command, values);
    const fit = await o.fit(cmd);
    rows.push({
      label: labelOf(values),
      values,
      microBatchSize: fit.batchSize,
      accumulation: fit.batchSize === null ? null : perRank / fit.batchSize,
      peakBytes: fit.batchSize === null ? null : fit.peakBytes,
      stepMs: null,
      noiseMs: null,
      samplesPerSecond: null,
      note: fit.batchSize === null ? fit.why : null,
    });
  }
  const order = rows.map((_, i) => i).filter((i) => rows[i]!.microBatchSize !== null).sort((a, b) => rows[b]!.microBatchSize! - rows[a]!.microBatchSize!);
  const K = o.timeSteps;
  const runs = new Map<number, Map<number, number>>(); // row → steps → wall ms
  /** One more timed run of row i with `steps` steps; false (and a note) when it failed. */
  const run = async (i: number, steps: number): Promise<boolean> => {
    const row = rows[i]!;
    const m = row.microBatchSize!;
    const argv = splitCommand(fillLevers(o.command, row.values)).map((a) =>
      a.replaceAll('{probe_steps}', String(steps)).replaceAll('{micro_batch_size}', String(m)).replaceAll('{batch_size}', String(m)).replaceAll('{grad_accum}', '1'),
    );
    const t = await timeRun(argv, ctx, o.timeoutMs);
    if ('error' in t) {
      row.note = `timing run of ${steps} steps failed: ${t.error}`;
      row.stepMs = row.noiseMs = row.samplesPerSecond = null;
      return false;
    }
    if (!runs.has(i)) runs.set(i, new Map());
    runs.get(i)!.set(steps, t.ms);
    const est = slope(runs.get(i)!);
    row.stepMs = est.stepMs;
    row.noiseMs = est.noiseMs;
    row.samplesPerSecond = est.stepMs > 0 ? G / ((row.accumulation! * est.stepMs) / 1000) : null;
    return true;
  };
  let best: number | null = null;
  for (const i of order) {
    const row = rows[i]!;
    if (!(await run(i, 1)) || !(await run(i, 1 + K))) continue;
    // Early stop: two points give a step time but no noise; if even twice the best's noise band
    // (at least 10 %) cannot lift this one to the best, its third run is not needed.
    if (best !== null && row.samplesPerSecond !== null) {
      const b = rows[best]!;
      const margin = Math.max(0.1, (2 * (b.noiseMs ?? 0)) / b.stepMs!);
      if (row.samplesPerSecond * (1 + margin) < b.samplesPerSecond!) {
        row.note = `stopped early: cannot win (${row.samplesPerSecond.toFixed(1)} samples/s from runs of 1 and ${1 + K} steps, against ${b.samplesPerSecond!.toFixed(1)})`;
        row.noiseMs = null;
        continue;
      }
    }
    if (!(await run(i, 1 + 2 * K))) continue;
    if (row.samplesPerSecond !== null && (best === null || row.samplesPerSecond > rows[best]!.samplesPerSecond!)) best = i;
  }
  // Close call: the two fastest within each other's noise get a longer run each (1 + 4K steps,
  // then 1 + 8K if still close); only then does a tie go to the lower peak.
  for (const span of [4 * K, 8 * K]) {
    const ranked = order.filter((i) => rows[i]!.noiseMs !== null && rows[i]!.samplesPerSecond !== null).sort((a, b) => rows[b]!.samplesPerSecond! - rows[a]!.samplesPerSecond!);
    if (ranked.length < 2) break;
    const [a, b] = [rows[ranked[0]!]!, rows[ranked[1]!]!];
    const se = (r: TuneRow): number => (r.samplesPerSecond! * r.noiseMs!) / r.stepMs!;
    if (a.samplesPerSecond! - b.samplesPerSecond! > 2 * Math.hypot(se(a), se(b))) break;
    ctx.say(ctx.style.dim(`${a.label} and ${b.label} are within the noise: a longer run each (${1 + span} steps)`));
    await run(ranked[0]!, 1 + span);
    await run(ranked[1]!, 1 + span);
  }
  // Only fully timed rows compete (a row stopped early has no noise estimate and lost by a margin).
  const measured: MeasuredCandidate[] = rows.map((r) => ({ ...r, stepMs: r.noiseMs === null ? null : r.stepMs }));
  const choice = chooseConfiguration(measured, G);
  if (choice.chosen === null) throw new UsageError(`no configuration could be timed: ${rows.map((r) => `${r.label}: ${r.note ?? 'not timed'}`).join('; ')}`);
  const entry: TuneEntry = {
    chosen: choice.chosen,
    reason: choice.reason,
    rows,
    globalBatchSize: G,
    worldSize: N,
    timeSteps: o.timeSteps,
    budgetBytes: o.budgetBytes,
    gpuName: o.gpuName,
    gpuMemoryGb: o.gpuMemoryGb,
    command: o.command,
    savedAt: new Date().toISOString(),
  };
  printTable(ctx, entry);
  ctx.say(ctx.style.dim(`tuned in ${((performance.now() - t0) / 1000).toFixed(1)} s`));
  let cachePath: string | null = null;
  if (!o.noCache) cachePath = await saveTuneEntry(key, entry, location);
  ctx.emit({ tune: entry, source: 'measured', key, cache_path: cachePath, tune_ms: performance.now() - t0 });
  return entry;
}

/** The table (candidate × m × a × peak × step × samples/s), the choice and why. */
export function printTable(ctx: CommandContext, e: TuneEntry): void {
  const N = e.worldSize;
  const rows: string[][] = [['', 'configuration', 'micro-batch', 'peak', 'step', 'samples/s', 'note']];
  e.rows.forEach((r, i) => {
    rows.push([
      i === e.chosen ? '→' : '',
      r.label,
      r.microBatchSize === null ? '—' : formatMicroBatch({ microBatchSize: r.microBatchSize, accumulation: r.accumulation!, worldSize: N }),
      r.peakBytes === null ? (r.microBatchSize === null ? '—' : 'unknown') : formatBytes(r.peakBytes),
      r.stepMs === null ? '—' : `${r.stepMs.toFixed(1)} ms${r.noiseMs !== null ? ` ±${r.noiseMs.toFixed(1)}` : ''}`,
      r.samplesPerSecond === null ? '—' : r.samplesPerSecond.toFixed(1),
      r.note ?? '',
    ]);
  });
  ctx.say(renderTable(rows, ctx.style.bold));
  const c = e.rows[e.chosen]!;
  ctx.say(`choice: ${ctx.style.bold(c.label)}, micro-batch ${formatMicroBatch({ microBatchSize: c.microBatchSize!, accumulation: c.accumulation!, worldSize: N })}: ${e.reason}`);
}
