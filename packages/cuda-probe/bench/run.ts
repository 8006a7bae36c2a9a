// Probe + search vs an exhaustive linear scan, on the onnx-train bench geometry (4 layers,
// dModel 256, 4 heads, seqLen 128, vocab 256), CPU, under one fixed budget.
//
//   npm run bench -w @soup/cuda-probe              human table
//   npm run bench -w @soup/cuda-probe -- --json    one JSON object on stdout
//   options: --budget-mib 96  --threads 1  --ceiling 16
//
// The JSON is also written to bench-results/probe-vs-linear.json.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { probeBatchSize } from '@soup/batch-probe';
import { createTrainStepProbe, deviceIdentity, type ProbeTrialOutcome } from '../src/index';

const args = process.argv.slice(2);
const json = args.includes('--json');
const opt = (name: string, fallback: number): number => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? Number(args[i + 1]) : fallback;
};
const MiB = 2 ** 20;
const budgetMiB = opt('budget-mib', 96);
const threads = opt('threads', 1);
const ceiling = opt('ceiling', 16);
const spec = { vocabSize: 256, seqLen: 128, dModel: 256, nHeads: 4, nLayers: 4 };

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const round = (x: number, d = 1): number => Math.round(x * 10 ** d) / 10 ** d;

const probe = createTrainStepProbe({ spec, budgetBytes: budgetMiB * MiB, intraOpNumThreads: threads, timeoutMs: 300_000 });
const outcomes: Array<ProbeTrialOutcome & { phase: string }> = [];
const record =
  (phase: string) =>
  async (b: number): Promise<ProbeTrialOutcome> => {
    const o = await probe(b);
    outcomes.push({ ...o, phase });
    return o;
  };

const t0 = performance.now();
const search = await probeBatchSize(record('search'), { start: 2, ceiling });
const probeSeconds = (performance.now() - t0) / 1000;

let linearScanBatch = 0;
for (let b = 1; b <= ceiling; b++) {
  const o = await record('linear')(b);
  if (!o.fits) break;
  linearScanBatch = b;
}

const overheads = outcomes.map((o) => o.overheadMs).filter((x): x is number => x !== undefined);
// Where a trial's time goes (median over the trials that reported it).
const phaseNames = ['spawn', 'moduleLoad', 'runtime', 'session', 'step', 'exit'] as const;
const withPhases = outcomes.filter((o) => o.phasesMs !== undefined);
const phasesMedianMs = Object.fromEntries(phaseNames.map((n) => [n, round(median(withPhases.map((o) => o.phasesMs![n])))])) as Record<(typeof phaseNames)[number], number>;
const device = await deviceIdentity({ device: 'cpu' });
const result = {
  foundBatch: search.batchSize,
  linearScanBatch,
  trials: search.trials.length,
  probeSeconds: round(probeSeconds, 2),
  perTrialOverheadMs: round(median(overheads)),
  perTrialOverheadP90Ms: round([...overheads].sort((a, b) => a - b)[Math.floor(overheads.length * 0.9)] ?? Number.NaN),
  medianStepMs: round(median(outcomes.map((o) => o.stepMs ?? 0))),
  phasesMedianMs,
  warmWorker: process.env.SOUP_PROBE_WARM !== '0',
  calibrationMs: round(outcomes.find((o) => o.calibrationMs !== undefined)?.calibrationMs ?? 0),
  linearTrials: outcomes.filter((o) => o.phase === 'linear').length,
  budgetBytes: budgetMiB * MiB,
  geometry: { ...spec, intraOpNumThreads: threads },
  device: `${device.gpuName} ${device.gpuMemoryGb} GiB`,
  node: process.version,
  trialLog: outcomes.map((o) => ({
    phase: o.phase,
    batchSize: o.batchSize,
    fits: o.fits,
    reason: o.reason,
    peakMiB: o.peakBytes !== undefined ? round(o.peakBytes / MiB) : null,
    ms: Math.round(o.ms),
    stepMs: o.stepMs !== undefined ? Math.round(o.stepMs) : null,
    overheadMs: o.overheadMs !== undefined ? Math.round(o.overheadMs) : null,
    ...(o.phasesMs ? { phasesMs: o.phasesMs } : {}),
  })),
};

const out = join(dirname(fileURLToPath(import.meta.url)), '..', 'bench-results', 'probe-vs-linear.json');
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);

if (json) {
  process.stdout.write(`${JSON.stringify(result)}\n`);
} else {
  console.log(`cuda-probe bench: onnx-train geometry ${JSON.stringify(spec)}, CPU, ${threads} thread(s), budget ${budgetMiB} MiB`);
  console.log('phase   batch  fits  reason       peak MiB  trial ms  step ms  overhead ms');
  for (const t of result.trialLog) {
    console.log(
      `${t.phase.padEnd(7)} ${String(t.batchSize).padStart(5)}  ${String(t.fits).padEnd(5)} ${t.reason.padEnd(12)} ${String(t.peakMiB).padStart(8)}  ${String(t.ms).padStart(8)}  ${String(t.stepMs).padStart(7)}  ${String(t.overheadMs).padStart(11)}`,
    );
  }
  console.log('');
  console.log(`foundBatch          ${result.foundBatch}`);
  console.log(`linearScanBatch     ${result.linearScanBatch}   (${result.foundBatch === result.linearScanBatch ? 'same' : 'DIFFERENT'})`);
  console.log(`trials (search)     ${result.trials}`);
  console.log(`probeSeconds        ${result.probeSeconds}  (search, calibration included: ${result.calibrationMs} ms)`);
  console.log(`perTrialOverheadMs  ${result.perTrialOverheadMs} median, ${result.perTrialOverheadP90Ms} p90  (spawn + session create + batch build + exit)`);
  console.log(`where a trial's time goes (median ms): ${phaseNames.map((n) => `${n} ${phasesMedianMs[n]}`).join(', ')}`);
  console.log(`wrote ${out}`);
}
