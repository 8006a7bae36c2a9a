// One mode of the offload bench, in a fresh process so its peak RSS is its own: creates the
// step (fused, or segmented with a keep / disk store), records the resident memory once the
// sessions exist (the baseline), resets the peak, runs a warm-up step and the timed steps, and
// prints one JSON line. See run.ts for why '@soup/onnx-train' resolves here without being a dependency.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTrainStep, defineGptSpec, makeSyntheticBatch, SegmentedTrainStep } from '@soup/onnx-train';

interface Config {
  mode: 'fused' | 'segmented-keep' | 'segmented-disk';
  spec: Parameters<typeof defineGptSpec>[0];
  batchSize: number;
  threads: number;
  steps: number;
}

const cfg = JSON.parse(process.argv[2]!) as Config;
const status = (field: 'VmHWM' | 'VmRSS'): number =>
  Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync('/proc/self/status', 'utf8'))![1]) / 1024;

// The disk store's save dir must be under the working directory: run in a temp dir of our own.
const cwd = mkdtempSync(join(tmpdir(), 'soup-offload-bench-'));
process.chdir(cwd);
try {
  const spec = defineGptSpec(cfg.spec);
  const step = await createTrainStep({
    spec,
    seed: 0,
    intraOpNumThreads: cfg.threads,
    execution: cfg.mode === 'fused' ? 'fused' : 'segmented',
    ...(cfg.mode === 'segmented-disk' ? { offload: { target: 'disk' as const, saveDir: '.soup-acts' } } : {}),
  });
  const batch = makeSyntheticBatch({ spec, batchSize: cfg.batchSize, seed: 1 });
  const baselineRssMB = status('VmRSS');
  let peakReset = true;
  try {
    writeFileSync('/proc/self/clear_refs', '5'); // VmHWM := VmRSS, so the sessions' setup peak is not counted
  } catch {
    peakReset = false;
  }
  await step.run(batch); // warm-up: ORT's first-run allocations (counted in the peak, not in the time)
  const times: number[] = [];
  let loss = Number.NaN;
  for (let i = 0; i < cfg.steps; i++) {
    const r = await step.run(batch);
    times.push(r.totalMs);
    loss = r.loss;
  }
  const peakRssMB = status('VmHWM');
  const stats = step instanceof SegmentedTrainStep ? step.lastStepStats : null;
  await step.release();
  const leftover = readdirSync(cwd).flatMap((d) => (d === '.soup-acts' ? readdirSync(join(cwd, d)) : []));
  times.sort((a, b) => a - b);
  console.log(
    JSON.stringify({
      mode: cfg.mode,
      baselineRssMB,
      peakRssMB,
      activationMB: peakRssMB - baselineRssMB,
      peakReset,
      stepMs: times[Math.floor(times.length / 2)]!,
      stepMsMin: times[0]!,
      loss,
      scratchFilesLeft: leftover.length,
      ...(stats
        ? {
            bytesPacked: stats.store.bytesPacked,
            peakDiskBytes: stats.store.peakDiskBytes,
            peakResidentBytes: stats.store.peakResidentBytes,
            forwardMs: stats.forwardMs,
            backwardMs: stats.backwardMs,
            packMs: stats.packMs,
            unpackMs: stats.unpackMs,
            optimizerMs: stats.optimizerMs,
          }
        : {}),
    }),
  );
} finally {
  process.chdir(tmpdir());
  rmSync(cwd, { recursive: true, force: true });
}
