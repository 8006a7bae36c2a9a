// One side of the bench, run in a fresh process so its peak RSS is its own:
// times the onnx-train step on the bench geometry and a plain GEMM on the same runtime.
import { readFileSync, rmSync } from 'node:fs';
import ort from 'onnxruntime-node';
import { defineGptSpec, makeSyntheticBatch, TrainStep, trainingFlopsPerToken } from '../src/index';
import { gemmModel } from './_gemm';
import { summarizeProfile } from './_profile';

interface Config {
  spec: Parameters<typeof defineGptSpec>[0];
  batchSize: number;
  threads: number;
  steps: number;
  warmup: number;
  maxSeconds: number;
  recompute?: string[];
  profileFilePrefix?: string;
  /** Accumulate the gradients of batchSize / microBatchSize micro-batches per step. */
  microBatchSize?: number;
}

const cfg = JSON.parse(process.argv[2]!) as Config;
const rssMB = (field: 'VmHWM' | 'VmRSS'): number =>
  Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync('/proc/self/status', 'utf8'))![1]) / 1024;

async function gemmGflops(n: number, threads: number): Promise<number> {
  const session = await ort.InferenceSession.create(gemmModel(n), { intraOpNumThreads: threads, logSeverityLevel: 3 });
  const a = new ort.Tensor(
    'float32',
    Float32Array.from({ length: n * n }, (_, i) => ((i * 7919) % 1000) / 1000 - 0.5),
    [n, n],
  );
  const b = new ort.Tensor(
    'float32',
    Float32Array.from({ length: n * n }, (_, i) => ((i * 104729) % 1000) / 1000 - 0.5),
    [n, n],
  );
  await session.run({ a, b });
  let best = Infinity;
  for (let i = 0; i < 6; i++) {
    const t0 = performance.now();
    await session.run({ a, b });
    best = Math.min(best, performance.now() - t0);
  }
  await session.release();
  return (2 * n ** 3) / (best / 1000) / 1e9;
}

const spec = defineGptSpec(cfg.spec);
const baselineRssMB = rssMB('VmRSS');
const step = await TrainStep.create({
  spec,
  seed: 0,
  intraOpNumThreads: cfg.threads,
  ...(cfg.recompute ? { recompute: cfg.recompute } : {}),
  ...(cfg.profileFilePrefix ? { profileFilePrefix: cfg.profileFilePrefix } : {}),
});
const batch = makeSyntheticBatch({ spec, batchSize: cfg.batchSize, seed: 1 });
const runOpts = cfg.microBatchSize !== undefined ? { microBatchSize: cfg.microBatchSize } : {};
for (let i = 0; i < cfg.warmup; i++) await step.run(batch, runOpts);
const times: number[] = [];
const deadline = performance.now() + cfg.maxSeconds * 1000;
let loss = Number.NaN;
for (let i = 0; i < cfg.steps; i++) {
  const r = await step.run(batch, runOpts);
  times.push(r.totalMs);
  loss = r.loss;
  if (performance.now() > deadline) break;
}
const profilePath = step.endProfiling();
const profile = profilePath ? summarizeProfile(profilePath, 3) : undefined;
if (profilePath) rmSync(profilePath, { force: true });
const peakRssMB = rssMB('VmHWM');
await step.release();
times.sort((a, b) => a - b);
const stepMs = times[Math.floor(times.length / 2)]!;
const tokens = cfg.batchSize * spec.seqLen;
const gemm = await gemmGflops(1024, cfg.threads);
console.log(
  JSON.stringify({
    steps: times.length,
    stepMsMedian: stepMs,
    stepMsMin: times[0],
    tokensPerSec: tokens / (stepMs / 1000),
    modelGflopPerStep: (trainingFlopsPerToken(spec) * tokens) / 1e9,
    peakRssMB,
    baselineRssMB,
    gemmGflops: gemm,
    loss,
    profile,
  }),
);
