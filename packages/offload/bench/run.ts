// @soup/offload bench: what activation offloading buys on a real training step.
//   npm run bench -w @soup/offload -- [--json] [--batch 32] [--small-batch 2] [--steps 4] [--rounds 2] [--threads 2]
//
// The onnx-train bench geometry (4 layers, dModel 256, 4 heads, seqLen 128, vocab 256) at a batch
// where activations dominate, in three modes, each in a FRESH child process (so each peak RSS is
// its own): `fused` (one ORT session for the whole step), `segmented-keep` (one segment per half
// block, saved activations kept in memory) and `segmented-disk` (saved activations through an
// ActivationStore to scratch files). Rounds alternate the modes; each mode keeps its median step
// time of its fastest round and the highest peak of all rounds (the machine may be shared).
// Peak activation MB (`peakActivationMB`) = the batch-dependent part of the step's peak RSS,
// extrapolated to the bench batch B from a second fresh child per mode at a small batch b:
//   peakActivationMB = (peakRss(B) − peakRss(b)) × B / (B − b)
// (the peak grows linearly in the batch; what does not depend on it — the runtime, the sessions,
// the weights, the optimizer state, the arena's fixed part — cancels). Also reported unchanged:
// `peakRssMB` (VmHWM at B) and `aboveBaselineMB` = VmHWM − the RSS once the sessions exist (the
// figure this bench called activationMB before), with the cuts each gives.
//
// Imports: this package must not depend on @soup/onnx-train (onnx-train depends on it: a cycle),
// so step-child.ts imports '@soup/onnx-train' through the workspace's node_modules symlink
// without declaring it. Build it first: npx turbo run build --filter=@soup/onnx-train...
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const pkgDir = join(here, '..');
const args = process.argv.slice(2);
const json = args.includes('--json');
const flag = (name: string, def: number): number => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : def;
};
const spec = { vocabSize: 256, seqLen: 128, dModel: 256, nHeads: 4, nLayers: 4, dFF: 1024, tieEmbeddings: true };
const batchSize = flag('--batch', 32);
const smallBatch = flag('--small-batch', 2);
if (!(Number.isInteger(smallBatch) && smallBatch >= 1 && smallBatch < batchSize)) throw new Error(`--small-batch must be an integer in [1, --batch) (got ${smallBatch})`);
const steps = flag('--steps', 4);
const rounds = flag('--rounds', 2);
const threads = flag('--threads', 2);
const MODES = ['fused', 'segmented-keep', 'segmented-disk'] as const;
type Mode = (typeof MODES)[number];
const TARGET_CUT = 0.7;
const TARGET_SLOWDOWN = 1.5;
const log = (s: string): void => {
  if (!json) process.stderr.write(`${s}\n`);
};

interface ChildReport {
  mode: Mode;
  baselineRssMB: number;
  peakRssMB: number;
  activationMB: number;
  peakReset: boolean;
  stepMs: number;
  stepMsMin: number;
  loss: number;
  scratchFilesLeft: number;
  [k: string]: unknown;
}

function runChild(mode: Mode, batch: number): ChildReport {
  const cfg = JSON.stringify({ mode, spec, batchSize: batch, threads, steps });
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(here, 'step-child.ts'), cfg], { cwd: pkgDir, encoding: 'utf8', maxBuffer: 1 << 24 });
  if (r.status !== 0) throw new Error(`${mode} child failed (${r.status ?? r.signal}): ${(r.stderr || r.error?.message || '').slice(-2000)}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as ChildReport;
}

log(`geometry ${JSON.stringify(spec)} batch ${batchSize} (and ${smallBatch}), ${threads} threads, ${steps} timed steps after a warm-up, ${rounds} rounds`);
const runs = new Map<Mode, ChildReport[]>(MODES.map((m) => [m, []]));
const smallRuns = new Map<Mode, ChildReport[]>(MODES.map((m) => [m, []]));
for (let r = 0; r < rounds; r++) {
  for (const mode of MODES) {
    for (const [batch, into] of [
      [batchSize, runs],
      [smallBatch, smallRuns],
    ] as const) {
      log(`round ${r + 1}/${rounds}: ${mode} batch ${batch} ...`);
      const report = runChild(mode, batch);
      if (report.scratchFilesLeft !== 0) throw new Error(`${mode}: ${report.scratchFilesLeft} scratch file(s) left after release`);
      into.get(mode)!.push(report);
    }
  }
}

const round = (x: number, d = 0): number => Math.round(x * 10 ** d) / 10 ** d;
const summary = (mode: Mode) => {
  const all = runs.get(mode)!;
  const fastest = all.reduce((a, b) => (a.stepMs <= b.stepMs ? a : b));
  const worst = all.reduce((a, b) => (a.peakRssMB >= b.peakRssMB ? a : b));
  const small = smallRuns.get(mode)!.reduce((a, b) => (a.peakRssMB >= b.peakRssMB ? a : b));
  const peakActivationMB = ((worst.peakRssMB - small.peakRssMB) * batchSize) / (batchSize - smallBatch);
  return {
    peakActivationMB: round(peakActivationMB),
    peakRssMB: round(worst.peakRssMB),
    aboveBaselineMB: round(Math.max(...all.map((x) => x.activationMB))),
    stepMs: round(fastest.stepMs),
    baselineRssMB: round(worst.baselineRssMB),
    small: { batchSize: smallBatch, peakRssMB: round(small.peakRssMB), aboveBaselineMB: round(small.activationMB), stepMs: round(small.stepMs) },
    loss: fastest.loss,
    ...(fastest.bytesPacked !== undefined
      ? {
          packedMB: round(Number(fastest.bytesPacked) / 2 ** 20),
          peakDiskMB: round(Number(fastest.peakDiskBytes) / 2 ** 20),
          packMs: round(Number(fastest.packMs)),
          unpackMs: round(Number(fastest.unpackMs)),
        }
      : {}),
    rounds: all.map((x) => ({ stepMs: round(x.stepMs), peakRssMB: round(x.peakRssMB), aboveBaselineMB: round(x.activationMB) })),
  };
};
const modes = Object.fromEntries(MODES.map((m) => [m, summary(m)])) as Record<Mode, ReturnType<typeof summary>>;
const fused = modes.fused;
const disk = modes['segmented-disk'];
const diskCutVsFused = round(1 - disk.peakActivationMB / fused.peakActivationMB, 3);
const diskCutVsFusedAboveBaseline = round(1 - disk.aboveBaselineMB / fused.aboveBaselineMB, 3);
const diskCutVsFusedPeakRss = round(1 - disk.peakRssMB / fused.peakRssMB, 3);
const diskSlowdownVsFused = round(disk.stepMs / fused.stepMs, 2);
const losses = MODES.map((m) => modes[m].loss);
const result = {
  modes,
  diskCutVsFused,
  diskCutVsFusedAboveBaseline,
  diskCutVsFusedPeakRss,
  diskSlowdownVsFused,
  definitions: {
    peakActivationMB: `batch-dependent part of the step's peak RSS at batch ${batchSize}: (peakRssMB(${batchSize}) − peakRssMB(${smallBatch})) × ${batchSize} / (${batchSize} − ${smallBatch}), each peak from a fresh child`,
    aboveBaselineMB: "the step's peak RSS (VmHWM, reset once the sessions exist) − the RSS at that point",
    diskCutVsFused: '1 − peakActivationMB(segmented-disk) / peakActivationMB(fused)',
    diskCutVsFusedAboveBaseline: '1 − aboveBaselineMB(segmented-disk) / aboveBaselineMB(fused)',
    diskCutVsFusedPeakRss: '1 − peakRssMB(segmented-disk) / peakRssMB(fused)',
  },
  keepSlowdownVsFused: round(modes['segmented-keep'].stepMs / fused.stepMs, 2),
  targets: { diskCutVsFused: TARGET_CUT, diskSlowdownVsFused: TARGET_SLOWDOWN },
  cutMet: diskCutVsFused >= TARGET_CUT,
  slowdownMet: diskSlowdownVsFused <= TARGET_SLOWDOWN,
  sameLoss: losses.every((l) => Math.abs(l - losses[0]!) <= 1e-6),
  batchSize,
  smallBatch,
  threads,
  steps,
  rounds,
  spec,
};

mkdirSync(join(pkgDir, 'bench-results'), { recursive: true });
writeFileSync(join(pkgDir, 'bench-results', 'offload.json'), `${JSON.stringify(result, null, 2)}\n`);
if (json) {
  process.stdout.write(`${JSON.stringify(result)}\n`);
} else {
  console.log(
    `${'mode'.padEnd(16)} ${'peak activation MB'.padStart(19)} ${'peak RSS MB'.padStart(12)} ${`RSS@b${smallBatch} MB`.padStart(11)} ${'above baseline MB'.padStart(18)} ${'step ms'.padStart(9)}`,
  );
  for (const m of MODES) {
    const x = modes[m];
    console.log(
      `${m.padEnd(16)} ${String(x.peakActivationMB).padStart(19)} ${String(x.peakRssMB).padStart(12)} ${String(x.small.peakRssMB).padStart(11)} ${String(x.aboveBaselineMB).padStart(18)} ${String(x.stepMs).padStart(9)}`,
    );
  }
  console.log(
    `disk vs fused: activation peak −${round(diskCutVsFused * 100, 1)}% (target ≥ ${TARGET_CUT * 100}%: ${result.cutMet ? 'met' : 'missed'}; ` +
      `above-baseline −${round(diskCutVsFusedAboveBaseline * 100, 1)}%, peak RSS −${round(diskCutVsFusedPeakRss * 100, 1)}%), ` +
      `step ×${diskSlowdownVsFused} (target ≤ ${TARGET_SLOWDOWN}: ${result.slowdownMet ? 'met' : 'missed'})`,
  );
}
