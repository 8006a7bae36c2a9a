// One child of the offload bench, run by run.ts inside a memory cgroup: creates the step (fused,
// or segmented with a keep / disk store), runs a warm-up step and the timed steps, and prints one
// JSON line. Plain JavaScript on purpose: no TypeScript loader (tsx starts an esbuild service, a
// second process whose memory the cgroup would count) — what the cap sees is the step.
// '@soup/onnx-train' resolves through the workspace's node_modules (see run.ts; build it first).
import { readdirSync, readFileSync } from 'node:fs';
import { createTrainStep, defineGptSpec, makeSyntheticBatch, SegmentedTrainStep } from '@soup/onnx-train';

const cfg = JSON.parse(process.argv[2]);
const hwmMB = () => Number(/VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))[1]) / 1024;
const spec = defineGptSpec(cfg.spec);
const step = await createTrainStep({
  spec,
  seed: 0,
  intraOpNumThreads: cfg.threads,
  execution: cfg.mode === 'fused' ? 'fused' : 'segmented',
  ...(cfg.mode === 'segmented-disk'
    ? { offload: { target: 'disk', saveDir: '.soup-acts', ...(cfg.fsync !== undefined ? { fsync: cfg.fsync } : {}) } }
    : {}),
});
const batch = makeSyntheticBatch({ spec, batchSize: cfg.batchSize, seed: 1 });
process.stderr.write('ready\n');
const times = [];
const losses = [];
let cpu0 = null;
for (let i = 0; i <= cfg.steps; i++) {
  if (i === 1) cpu0 = process.cpuUsage();
  const r = await step.run(batch);
  if (i > 0) times.push(r.totalMs); // the first step is a warm-up (ORT's first-run allocations)
  losses.push(r.loss);
}
const cpu = process.cpuUsage(cpu0); // every thread of the process: ORT's pool, libuv's, the main one
const stats = step instanceof SegmentedTrainStep ? step.lastStepStats : null;
await step.release();
let scratchFilesLeft = 0;
try {
  scratchFilesLeft = readdirSync('.soup-acts').length;
} catch {
  // no save dir: not a disk run
}
const sorted = [...times].sort((a, b) => a - b);
console.log(
  JSON.stringify({
    mode: cfg.mode,
    batchSize: cfg.batchSize,
    // The median of the timed steps (never the fastest): with an even count, the mean of the middle two.
    stepMs:
      sorted.length % 2
        ? sorted[(sorted.length - 1) / 2]
        : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2,
    stepTimesMs: times,
    stepCpuMs: (cpu.user + cpu.system) / 1000 / cfg.steps,
    losses,
    peakRssMB: hwmMB(),
    scratchFilesLeft,
    ...(stats
      ? {
          packedMB: stats.store.bytesPacked / 2 ** 20,
          peakDiskMB: stats.store.peakDiskBytes / 2 ** 20,
          packMs: stats.packMs,
          unpackMs: stats.unpackMs,
          forwardMs: stats.forwardMs,
          headMs: stats.headMs,
          backwardMs: stats.backwardMs,
          optimizerMs: stats.optimizerMs,
        }
      : {}),
  }),
);
