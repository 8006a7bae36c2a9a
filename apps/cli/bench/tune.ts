// Bench: the tuner against the exhaustive grid, in one run.
// exec: `soup probe --exec --try grad_ckpt=false,true` on the known-cost Node trainer
//   (examples/known-cost-trainer: 64 MiB a sample, checkpointing halves it and adds 30 %), G = 32,
//   budget = its baseline + 384 MiB (no checkpointing fits 4, checkpointing 8).
// train: `soup plan` on the small template (threads 1, gradient_checkpointing: auto), budget 300 MiB.
// The grid measures every configuration × every divisor m of G: fit by the same judge (a probe
// child under the budget), then, where it fits, its step time by the same method as the tuner
// (exec: runs of 1, 1 + K and 1 + 2K steps; train: a warm-up + 8 steps in process).
//   tunedOverBestRatio = samples/s of soup's choice / the grid's best, both from the grid's measurements
//   tuneCostRatio      = wall time of soup's tuning / the grid's wall time
import { createCommandProbe, createTrainStepProbe } from '@soup/cuda-probe';
import { runNode } from '@soup/test-utils';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../src/load-config';
import { gptSpecOf, recomputeOf } from '../src/_plan';
import { slope } from '../src/_tune-exec';
import { timeTrainStep, TRAIN_TIERS } from '../src/_tune-train';

const soupBin = fileURLToPath(new URL('../bin/soup.js', import.meta.url));
const twin = fileURLToPath(new URL('../../../examples/known-cost-trainer/train.mjs', import.meta.url));
const G = 32;
const DIVISORS = [1, 2, 4, 8, 16, 32];
const MiB = 2 ** 20;

export interface TuneBenchRow {
  mode: 'exec' | 'train';
  choice: string;
  gridBest: string;
  tunedOverBestRatio: number;
  tuneCostRatio: number;
  tuneSeconds: number;
  gridSeconds: number;
  grid: { config: string; m: number; fits: boolean; samplesPerSecond: number | null }[];
}

async function wallMs(argv: string[], cwd: string): Promise<number> {
  const { spawn } = await import('node:child_process');
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const c = spawn(argv[0]!, argv.slice(1), { cwd, stdio: 'ignore' });
    c.on('error', reject);
    c.on('close', (code) => (code === 0 ? resolve(performance.now() - t0) : reject(new Error(`${argv.join(' ')} exited ${code}`))));
  });
}

export async function benchExec(cwd: string, K = 8): Promise<TuneBenchRow> {
  const baseline = process.memoryUsage().rss; // the twin is a plain node process: about this much before it allocates
  const budget = Math.round(baseline + 384 * MiB);
  const cmd = (ckpt: string, m: string, steps: string): string[] => [process.execPath, twin, '--micro_batch_size', m, '--grad_ckpt', ckpt, '--max_steps', steps, '--per_sample_mib', '64'];
  const env = { PATH: process.env.PATH, HOME: cwd, NO_COLOR: '1' };
  const t0 = performance.now();
  const r = await runNode(
    [soupBin, 'probe', '--exec', cmd('{grad_ckpt}', '{micro_batch_size}', '{probe_steps}').join(' '), '--global-batch-size', String(G), '--try', 'grad_ckpt=false,true', '--budget', `${budget}B`, '--time-steps', String(K), '--no-cache', '--json'],
    { cwd, env, timeoutMs: 900_000 },
  );
  const tuneMs = performance.now() - t0;
  if (r.code !== 0) throw new Error(`soup probe --try failed: ${r.stderr.slice(-2000)}`);
  const tune = (JSON.parse(r.stdout) as { tune: { chosen: number; rows: { values: Record<string, string>; microBatchSize: number }[] } }).tune;
  const chosen = tune.rows[tune.chosen]!;
  const g0 = performance.now();
  const grid: TuneBenchRow['grid'] = [];
  for (const ckpt of ['false', 'true']) {
    const probe = createCommandProbe({ command: cmd(ckpt, '{batch_size}', '1').join(' '), budgetBytes: budget, cwd, env });
    for (const m of DIVISORS) {
      const fits = (await probe(m)).fits;
      let sps: number | null = null;
      if (fits) {
        const points = new Map<number, number>();
        for (const steps of [1, 1 + K, 1 + 2 * K]) points.set(steps, await wallMs(cmd(ckpt, String(m), String(steps)), cwd));
        sps = (G / ((G / m) * slope(points).stepMs)) * 1000;
      }
      grid.push({ config: `grad_ckpt=${ckpt}`, m, fits, samplesPerSecond: sps });
    }
  }
  return summary('exec', grid, `grad_ckpt=${chosen.values.grad_ckpt}`, chosen.microBatchSize, tuneMs, performance.now() - g0);
}

export async function benchTrain(cwd: string, budgetMiB = 300): Promise<TuneBenchRow> {
  const env = { PATH: process.env.PATH, HOME: cwd, NO_COLOR: '1' };
  const init = await runNode([soupBin, 'init', '--template', 'small'], { cwd, env, timeoutMs: 60_000 });
  if (init.code !== 0) throw new Error(`soup init failed: ${init.stderr}`);
  writeFileSync(join(cwd, 'soup.yaml'), readFileSync(join(cwd, 'soup.yaml'), 'utf8').replace(/^( {2}seed: .*)$/m, '$1\n  threads: 1'));
  const t0 = performance.now();
  const r = await runNode([soupBin, 'plan', '--budget', `${budgetMiB}MiB`, '--no-cache', '--json'], { cwd, env, timeoutMs: 900_000 });
  const tuneMs = performance.now() - t0;
  if (r.code !== 0) throw new Error(`soup plan failed: ${r.stderr.slice(-2000)}`);
  const tune = (JSON.parse(r.stdout) as { tune: { chosen: number; rows: { values: Record<string, string>; microBatchSize: number }[] } }).tune;
  const chosen = tune.rows[tune.chosen]!;
  const config = loadConfig({ path: 'soup.yaml', cwd }).config;
  const spec = gptSpecOf(config);
  const g0 = performance.now();
  const grid: TuneBenchRow['grid'] = [];
  for (const g of TRAIN_TIERS) {
    const recompute = recomputeOf(config, g);
    const probe = createTrainStepProbe({ device: 'cpu', spec, plan: recompute, budgetBytes: budgetMiB * MiB, intraOpNumThreads: 1, cwd, env });
    for (const m of DIVISORS) {
      const fits = (await probe(m)).fits;
      const sps = fits ? (G / ((G / m) * (await timeTrainStep({ spec, recompute, batchSize: m, threads: 1, offload: null, steps: 8, cwd })).stepMs)) * 1000 : null;
      grid.push({ config: `gradient_checkpointing=${g ?? 'false'}`, m, fits, samplesPerSecond: sps });
    }
  }
  return summary('train', grid, `gradient_checkpointing=${chosen.values.gradient_checkpointing}`, chosen.microBatchSize, tuneMs, performance.now() - g0);
}

function summary(mode: 'exec' | 'train', grid: TuneBenchRow['grid'], config: string, m: number, tuneMs: number, gridMs: number): TuneBenchRow {
  const timed = grid.filter((x) => x.samplesPerSecond !== null);
  const best = timed.reduce((a, b) => (b.samplesPerSecond! > a.samplesPerSecond! ? b : a));
  const mine = grid.find((x) => x.config === config && x.m === m);
  return {
    mode,
    choice: `${config} @ ${m}`,
    gridBest: `${best.config} @ ${best.m}`,
    tunedOverBestRatio: Number(((mine?.samplesPerSecond ?? 0) / best.samplesPerSecond!).toFixed(3)),
    tuneCostRatio: Number((tuneMs / gridMs).toFixed(3)),
    tuneSeconds: Number((tuneMs / 1000).toFixed(1)),
    gridSeconds: Number((gridMs / 1000).toFixed(1)),
    grid: grid.map((x) => ({ ...x, samplesPerSecond: x.samplesPerSecond === null ? null : Number(x.samplesPerSecond.toFixed(2)) })),
  };
}
