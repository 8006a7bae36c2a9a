// Bench: the tuner against the exhaustive grid, in one run.
// exec: `soup probe --exec --try grad_ckpt=false,true` on the known-cost Node trainer
//   (examples/known-cost-trainer: 64 MiB a sample, checkpointing halves it and adds 30 %), G = 32,
//   budget = its baseline (a bare node's RSS) + 384 MiB (no checkpointing fits 4, checkpointing 8).
// train: `soup plan` on the small template (threads 1, gradient_checkpointing: auto), budget 300 MiB.
// The grid measures every configuration × every divisor m of G: fit by the same judge (a probe
// child under the budget), then, where it fits, its step time by the same method as the tuner
// (exec: runs of 1, 1 + K and 1 + 2K steps, each one probe of the command, the fit trial being the
// 1-step run, timed by the same clock: the output's span where it agrees with the wall time over
// all the grid's points, else the wall time; train: a warm-up + the tuner's steps in process).
//   tunedOverBestRatio = samples/s of soup's choice / the grid's best. Where the two differ, both are
//                        timed again (the referee, 3 rounds, the median): the best of many noisy
//                        grid points is biased up, and one disturbed run can sink a single point.
//                        train: each round two new sessions timed side by side (headToHead); exec:
//                        each round both timed once more, one after the other
//   tuneCostRatio      = wall time of soup's tuning / the grid's wall time (the referee not counted)
import { createCommandProbe } from '@soup/cuda-probe';
import { runNode } from '@soup/test-utils';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '@soup/config';
import { gptSpecOf, headToHead, measureTrainGrid } from '@soup/plan';
import { clockOf, stepBy, type TimedRun } from '@soup/tune';
import { median } from './_median';
import { initSmall } from './plan-paths';

let soupBin = fileURLToPath(new URL('../bin/soup.js', import.meta.url));
/** The soup whose tuner is measured (run.ts's `--soup`): another commit's, against this bench's grid and budgets. */
export function useSoupBin(path: string): void {
  soupBin = path;
}
const twin = fileURLToPath(new URL('../../../examples/known-cost-trainer/train.mjs', import.meta.url));
const torchTwin = fileURLToPath(new URL('../../../examples/known-cost-trainer/train.py', import.meta.url));
const G = 32;
const DIVISORS = [1, 2, 4, 8, 16, 32];
const MiB = 2 ** 20;

/**
 * Which known-cost trainer `benchExec` tunes: the Node twin as it is (the step grows linearly with m, so the largest
 * m is the fastest per sample), or the PyTorch twin whose step grows with m² (`exec-torch-sq`: 20 + 2 m + 10 m² ms,
 * fastest per sample at m = 1–2, so a tuner that times only the largest m that fits gets 0.68 of the grid's best).
 */
export interface ExecTwin {
  mode: 'exec' | 'exec-torch-sq';
  argv0: string[];
  extra: string[];
  /** The twin's own resident size at batch 0: the budget is this + 384 MiB. */
  baselineBytes(): number;
}

export const NODE_TWIN: ExecTwin = {
  mode: 'exec',
  argv0: [process.execPath, twin],
  extra: [],
  baselineBytes: bareNodeRssBytes,
};

export const TORCH_SQ_TWIN: ExecTwin = {
  mode: 'exec-torch-sq',
  argv0: ['/usr/bin/python3', torchTwin],
  extra: ['--step_ms', '20', '--sample_ms', '2', '--sample_sq_ms', '10'],
  baselineBytes: () =>
    Number(
      execFileSync(
        '/usr/bin/python3',
        [
          '-c',
          "import torch, re; print(int(re.search(r'VmRSS:\\s+(\\d+)', open('/proc/self/status').read())[1]) * 1024)",
        ],
        { encoding: 'utf8' },
      ).trim(),
    ),
};

export interface TuneBenchRow {
  mode: 'exec' | 'exec-torch-sq' | 'train';
  choice: string;
  gridBest: string;
  tunedOverBestRatio: number;
  tuneCostRatio: number;
  tuneSeconds: number;
  gridSeconds: number;
  grid: {
    config: string;
    m: number;
    fits: boolean;
    samplesPerSecond: number | null;
  }[];
  /** The tuner's own table and reason, as it printed them. */
  tunerTable: string[];
  /** The choice and the grid's best timed again alternately (samples/s, median of 3), when they differ. */
  referee: { chosen: number; gridBest: number } | null;
}

/**
 * The twin's baseline: a bare node's RSS, read in a child. Not this bench's own RSS: that grows with what the
 * bench imports, and a budget taken from it can cross the edge the fit's prediction sees (the next divisor within
 * 10 % of the budget is tried), so that each fit runs one more trial, a failing one, as the bench's imports change.
 */
function bareNodeRssBytes(): number {
  const out = execFileSync(process.execPath, ['-e', 'process.stdout.write(String(process.memoryUsage().rss))'], {
    encoding: 'utf8',
  });
  return Number(out);
}

export async function benchExec(cwd: string, K = 8, trainer: ExecTwin = NODE_TWIN): Promise<TuneBenchRow> {
  const budget = Math.round(trainer.baselineBytes() + 384 * MiB);
  const cmd = (ckpt: string, m: string, steps: string): string[] => [
    ...trainer.argv0,
    ...trainer.extra,
    '--micro_batch_size',
    m,
    '--grad_ckpt',
    ckpt,
    '--max_steps',
    steps,
    '--per_sample_mib',
    '64',
  ];
  const env = { PATH: process.env.PATH, HOME: cwd, NO_COLOR: '1' };
  const t0 = performance.now();
  const r = await runNode(
    [
      soupBin,
      'probe',
      '--exec',
      cmd('{grad_ckpt}', '{micro_batch_size}', '{probe_steps}').join(' '),
      '--global-batch-size',
      String(G),
      '--try',
      'grad_ckpt=false,true',
      '--budget',
      `${budget}B`,
      '--time-steps',
      String(K),
      '--no-cache',
      '--json',
    ],
    { cwd, env, timeoutMs: 900_000 },
  );
  const tuneMs = performance.now() - t0;
  if (r.code !== 0) throw new Error(`soup probe --try failed: ${r.stderr.slice(-2000)}`);
  const tune = (
    JSON.parse(r.stdout) as {
      tune: { chosen: number; rows: { values: Record<string, string>; microBatchSize: number }[] };
    }
  ).tune;
  const chosen = tune.rows[tune.chosen]!;
  const g0 = performance.now();
  const grid: TuneBenchRow['grid'] = [];
  // The tuner's own method: a run is one probe of the command (sampled RSS under the budget), its
  // times the child's own wall time and its output's span as the probe reports them; the fit trial
  // (1 step) is the 1-step point.
  const probeAt = async (ckpt: string, m: number, steps: number): Promise<{ fits: boolean; run: TimedRun }> => {
    const o = await createCommandProbe({
      command: cmd(ckpt, '{batch_size}', String(steps)).join(' '),
      budgetBytes: budget,
      cwd,
      env,
    })(m);
    return { fits: o.fits, run: { wallMs: o.ms, spanMs: o.outputSpanMs ?? null } };
  };
  const runsAt = async (p: { config: string; m: number }, oneStep?: TimedRun): Promise<Map<number, TimedRun>> => {
    const ckpt = p.config.split('=')[1]!;
    const points = new Map<number, TimedRun>();
    points.set(1, oneStep ?? (await probeAt(ckpt, p.m, 1)).run);
    for (const steps of [1 + K, 1 + 2 * K]) points.set(steps, (await probeAt(ckpt, p.m, steps)).run);
    return points;
  };
  const samplesPerSecond = (m: number, stepMs: number): number => (G / ((G / m) * stepMs)) * 1000;
  /** One point timed again on its own (the referee): its clock from its own three runs. */
  const timeOnce = async (p: { config: string; m: number }): Promise<number> => {
    const pts = await runsAt(p);
    return samplesPerSecond(p.m, stepBy(pts, clockOf(new Map([[0, pts]]), K).clock, null).stepMs);
  };
  const timed = new Map<number, Map<number, TimedRun>>(); // grid index → its runs
  for (const ckpt of ['false', 'true']) {
    for (const m of DIVISORS) {
      const fit = await probeAt(ckpt, m, 1);
      if (fit.fits) timed.set(grid.length, await runsAt({ config: `grad_ckpt=${ckpt}`, m }, fit.run));
      grid.push({ config: `grad_ckpt=${ckpt}`, m, fits: fit.fits, samplesPerSecond: null });
    }
  }
  // The clock over all the grid's points, as the tuner chooses it over all its rows.
  const clock = clockOf(timed, K).clock;
  for (const [i, pts] of timed)
    grid[i]!.samplesPerSecond = samplesPerSecond(grid[i]!.m, stepBy(pts, clock, null).stepMs);
  const gridMs = performance.now() - g0;
  const table = tableOf(r.stderr);
  return summary(
    trainer.mode,
    table,
    grid,
    `grad_ckpt=${chosen.values.grad_ckpt}`,
    chosen.microBatchSize,
    tuneMs,
    gridMs,
    timeOnce,
  );
}

export async function benchTrain(cwd: string, budgetMiB = 300): Promise<TuneBenchRow> {
  const env = { PATH: process.env.PATH, HOME: cwd, NO_COLOR: '1' };
  await initSmall(soupBin, cwd, env);
  const t0 = performance.now();
  const r = await runNode([soupBin, 'plan', '--budget', `${budgetMiB}MiB`, '--no-cache', '--json'], {
    cwd,
    env,
    timeoutMs: 900_000,
  });
  const tuneMs = performance.now() - t0;
  if (r.code !== 0) throw new Error(`soup plan failed: ${r.stderr.slice(-2000)}`);
  const tune = (
    JSON.parse(r.stdout) as {
      tune: {
        chosen: number;
        timeSteps: number;
        rows: { values: Record<string, string>; microBatchSize: number }[];
      };
    }
  ).tune;
  const chosen = tune.rows[tune.chosen]!;
  const config = loadConfig({ path: 'soup.yaml', cwd }).config;
  const spec = gptSpecOf(config);
  const g0 = performance.now();
  // The tuner's own per-point method: one probe child, then its timed steps (tune.timeSteps).
  const points = await measureTrainGrid({
    config,
    spec,
    budgetBytes: budgetMiB * MiB,
    steps: tune.timeSteps,
    cwd,
    env,
  });
  const gridMs = performance.now() - g0;
  const grid: TuneBenchRow['grid'] = points.map((p) => ({
    config: `gradient_checkpointing=${p.tier}`,
    m: p.m,
    fits: p.fits,
    samplesPerSecond: p.samplesPerSecond,
  }));
  const referee = async (
    p: { config: string; m: number },
    q: { config: string; m: number },
  ): Promise<[number, number]> =>
    headToHead(
      { config, spec, steps: tune.timeSteps, rounds: 3, cwd },
      { tier: p.config.split('=')[1]!, m: p.m },
      { tier: q.config.split('=')[1]!, m: q.m },
    );
  const table = tableOf(r.stderr);
  return summary(
    'train',
    table,
    grid,
    `gradient_checkpointing=${chosen.values.gradient_checkpointing}`,
    chosen.microBatchSize,
    tuneMs,
    gridMs,
    undefined,
    referee,
  );
}

/** The tuner's table, reason and timing lines from its stderr. */
/** The tuner's table and its lines, as soup printed them (each behind its `soup: ` mark). */
const tableOf = (stderr: string): string[] =>
  stderr
    .split('\n')
    .filter((l) => /^soup: (→| {3}\S)|^soup: (choice:|step times:|tuned in)|within the noise|trials in/.test(l));

async function summary(
  mode: TuneBenchRow['mode'],
  tunerTable: string[],
  grid: TuneBenchRow['grid'],
  config: string,
  m: number,
  tuneMs: number,
  gridMs: number,
  timeOnce?: (p: { config: string; m: number }) => Promise<number>,
  pair?: (p: { config: string; m: number }, q: { config: string; m: number }) => Promise<[number, number]>,
): Promise<TuneBenchRow> {
  const timed = grid.filter((x) => x.samplesPerSecond !== null);
  const best = timed.reduce((a, b) => (b.samplesPerSecond! > a.samplesPerSecond! ? b : a));
  const mine = grid.find((x) => x.config === config && x.m === m);
  let ratio = (mine?.samplesPerSecond ?? 0) / best.samplesPerSecond!;
  let referee: TuneBenchRow['referee'] = null;
  if (mine && mine !== best) {
    let pairOf = pair;
    if (!pairOf && timeOnce) {
      pairOf = async (p, q) => {
        const runs: [number[], number[]] = [[], []];
        for (let r = 0; r < 3; r++) for (const [i, x] of [p, q].entries()) runs[i]!.push(await timeOnce(x));
        return [median(runs[0]), median(runs[1])];
      };
    }
    if (pairOf) {
      const [a, b] = await pairOf(mine, best);
      referee = {
        chosen: Number(a.toFixed(2)),
        gridBest: Number(b.toFixed(2)),
      };
      ratio = a / b;
    }
  }
  return {
    tunerTable,
    referee,
    mode,
    choice: `${config} @ ${m}`,
    gridBest: `${best.config} @ ${best.m}`,
    tunedOverBestRatio: Number(ratio.toFixed(3)),
    tuneCostRatio: Number((tuneMs / gridMs).toFixed(3)),
    tuneSeconds: Number((tuneMs / 1000).toFixed(1)),
    gridSeconds: Number((gridMs / 1000).toFixed(1)),
    grid: grid.map((x) => ({
      ...x,
      samplesPerSecond: x.samplesPerSecond === null ? null : Number(x.samplesPerSecond.toFixed(2)),
    })),
  };
}
