// The `real` section of @soup/batch-probe's bench: the Node proportional trainer
// (src/_fixtures/proportional-trainer.cjs, a real child per trial) under a real RSS budget
// (createCommandProbe: sampled VmHWM, stopped at the budget), at three budgets × linear and
// quadratic memory, searched by bisection (refine) and by the predictive search, REPEATS times
// each. batch-probe's bench spawns this file by path (batch-probe cannot depend on cuda-probe).
// Prints one JSON object on stdout.
// The budgets are headroom above the trainer's own baseline, measured first on this machine (a Node
// process's resident size at batch 0 differs between machines and Node versions): 250, 400 and 550 MiB
// above it. `--torch`: the torch twin (src/_fixtures/proportional_trainer.py, a torch tensor held
// by /usr/bin/python3) instead, whose sampled RSS jitters by a few MiB more.
//
//   npx tsx packages/cuda-probe/bench/predictive-command.ts [--repeats 3] [--torch]
import { fileURLToPath } from 'node:url';
import { probeBatchSize } from '@soup/batch-probe';
import { createCommandProbe } from '../src/index';

const args = process.argv.slice(2);
const at = args.indexOf('--repeats');
const REPEATS = at >= 0 ? Number(args[at + 1]) : 3;
const MiB = 2 ** 20;
const torch = args.includes('--torch');
const trainer = fileURLToPath(
  new URL(
    torch ? '../src/_fixtures/proportional_trainer.py' : '../src/_fixtures/proportional-trainer.cjs',
    import.meta.url,
  ),
);
const command = [torch ? '/usr/bin/python3' : process.execPath, trainer, '{batch_size}'];

// The trainer holding nothing: its peak is the baseline every budget is placed above.
const baselineRun = await createCommandProbe({
  command,
  env: { ...process.env, MIB_PER_SAMPLE: '0', QUAD_KIB: '0', HOLD_MS: '150' },
  budgetBytes: 4096 * MiB,
  timeoutMs: 120_000,
})(1);
if (baselineRun.peakBytes === undefined) throw new Error(`the baseline run measured no peak (${baselineRun.reason})`);
const baselineMiB = Math.ceil(baselineRun.peakBytes / MiB);
const CASES = [
  ...[250, 400, 550].map((aboveMiB) => ({
    name: `linear-${aboveMiB}MiB-above-baseline`,
    env: { MIB_PER_SAMPLE: '8', QUAD_KIB: '0' },
    budgetMiB: baselineMiB + aboveMiB,
  })),
  ...[250, 400, 550].map((aboveMiB) => ({
    name: `quadratic-${aboveMiB}MiB-above-baseline`,
    env: { MIB_PER_SAMPLE: '1', QUAD_KIB: '256' },
    budgetMiB: baselineMiB + aboveMiB,
  })),
];
const START = 4;
const CEILING = 96;

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

const out = [];
for (const c of CASES) {
  const probe = createCommandProbe({
    command,
    env: { ...process.env, ...c.env, HOLD_MS: '150' },
    budgetBytes: c.budgetMiB * MiB,
    timeoutMs: 120_000,
  });
  const runs: Record<
    'refine' | 'predictive',
    Array<{ batchSize: number; trials: number; bound: string; sizes: string }>
  > = { refine: [], predictive: [] };
  for (let i = 0; i < REPEATS; i++) {
    for (const predict of [false, true]) {
      const r = await probeBatchSize(probe, { start: START, ceiling: CEILING, predict });
      runs[predict ? 'predictive' : 'refine'].push({
        batchSize: r.batchSize,
        trials: r.trials.length,
        bound: r.bound,
        sizes: r.trials.map((t) => `${t.batchSize}${t.fits ? '+' : '-'}`).join(' '),
      });
    }
  }
  // The answer every run should give: the most common one of all runs (RSS has a few MiB of noise).
  const all = [...runs.refine, ...runs.predictive].map((r) => r.batchSize);
  const counts = new Map<number, number>();
  for (const b of all) counts.set(b, (counts.get(b) ?? 0) + 1);
  const truth = [...counts].sort((x, y) => y[1] - x[1] || y[0] - x[0])[0]![0];
  const stat = (rs: typeof runs.refine) => ({
    medianTrials: median(rs.map((r) => r.trials)),
    maxTrials: Math.max(...rs.map((r) => r.trials)),
    exactRate: rs.filter((r) => r.bound === 'exact' && Math.abs(r.batchSize - truth) <= 1).length / rs.length,
    answers: rs.map((r) => r.batchSize),
    runs: rs,
  });
  out.push({
    name: c.name,
    budgetBytes: c.budgetMiB * MiB,
    start: START,
    ceiling: CEILING,
    consensus: truth,
    refine: stat(runs.refine),
    predictive: stat(runs.predictive),
  });
  process.stderr.write(
    `${c.name}: refine ${stat(runs.refine).medianTrials}/${stat(runs.refine).maxTrials}, predictive ` +
      `${stat(runs.predictive).medianTrials}/${stat(runs.predictive).maxTrials}\n`,
  );
}
process.stdout.write(
  `${JSON.stringify({
    trainer: torch
      ? 'python3 proportional_trainer.py (a torch uint8 tensor), sampled VmHWM, stopped at the budget'
      : 'node proportional-trainer.cjs (Buffer.alloc, resident), sampled VmHWM, stopped at the budget',
    repeats: REPEATS,
    baselineMiB,
    cases: out,
    node: process.version,
  })}\n`,
);
