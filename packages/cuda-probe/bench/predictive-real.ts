// The real half of @soup/batch-probe's `predictive` bench section: the ORT CPU train-step probe
// (one real onnx-train step per candidate in a child process, peak RSS against a budget) at two
// geometries, searched by today's refine and by the predictive search, side by side.
// batch-probe's bench spawns this file by path (batch-probe cannot depend on cuda-probe: that
// would be a workspace cycle). Prints one JSON object on stdout.
// Each geometry's budget is calibrated on this machine (bench/_calibrate.ts): the fit edge is aimed at
// `targetBatch`, where a fixed number of MiB could sit below one sample on another machine.
//
//   npx tsx packages/cuda-probe/bench/predictive-real.ts [--threads 1]
import { probeBatchSize, type ProbeBatchSizeResult } from '@soup/batch-probe';
import { createTrainStepProbe } from '../src/index';
import { type CalibratedBudget, calibrateBudget } from './_calibrate';

const args = process.argv.slice(2);
const threadsAt = args.indexOf('--threads');
const threads = threadsAt >= 0 ? Number(args[threadsAt + 1]) : 1;

const GEOMETRIES = [
  {
    name: 'ort-cpu-small',
    spec: { vocabSize: 256, seqLen: 64, dModel: 128, nHeads: 4, nLayers: 2 },
    targetBatch: 24,
    start: 2,
    ceiling: 256,
  },
  {
    name: 'ort-cpu-bench',
    spec: { vocabSize: 256, seqLen: 128, dModel: 256, nHeads: 4, nLayers: 4 },
    targetBatch: 4,
    start: 2,
    ceiling: 64,
  },
];

interface Run {
  batchSize: number;
  trials: number;
  bound: ProbeBatchSizeResult['bound'];
  sizes: number[];
  seconds: number;
}

async function search(g: (typeof GEOMETRIES)[number], budgetBytes: number, predict: boolean): Promise<Run> {
  // A fresh probe per search: each pays its own calibration, as a user's run would.
  const probe = createTrainStepProbe({
    spec: g.spec,
    budgetBytes,
    intraOpNumThreads: threads,
    timeoutMs: 300_000,
  });
  const t0 = performance.now();
  const r = await probeBatchSize(probe, { start: g.start, ceiling: g.ceiling, predict });
  return {
    batchSize: r.batchSize,
    trials: r.trials.length,
    bound: r.bound,
    sizes: r.trials.map((t) => t.batchSize),
    seconds: Math.round((performance.now() - t0) / 100) / 10,
  };
}

const cases = [];
for (const g of GEOMETRIES) {
  const budget: CalibratedBudget = await calibrateBudget({
    spec: g.spec,
    intraOpNumThreads: threads,
    targetBatch: g.targetBatch,
  });
  const refine = await search(g, budget.budgetBytes, false);
  const predictive = await search(g, budget.budgetBytes, true);
  cases.push({
    name: g.name,
    geometry: { ...g.spec, intraOpNumThreads: threads },
    budgetBytes: budget.budgetBytes,
    budget,
    start: g.start,
    ceiling: g.ceiling,
    refine,
    predictive,
  });
}
process.stdout.write(`${JSON.stringify({ cases, node: process.version })}\n`);
