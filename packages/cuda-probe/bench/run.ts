// Probe + search vs an exhaustive linear scan, on the onnx-train bench geometry (4 layers,
// dModel 256, 4 heads, seqLen 128, vocab 256), CPU, under one budget.
//
//   npm run bench -w @soup/cuda-probe              human table
//   npm run bench -w @soup/cuda-probe -- --json    one JSON object on stdout
//   options: --budget-mib N (default: calibrated, see below)  --threads 1  --ceiling 16
//   The budget by default comes from this machine: the step's growth at batch 1 and ceiling / 2, measured
//   unbudgeted (bench/_calibrate.ts), puts the fit edge at ceiling / 2, so the search and the
//   linear scan both meet a failing batch on any machine. `budget` in the JSON says how it was set.
//   --compare [--rounds 3]: instead, the per-trial overhead of the three ways to run a trial, in
//   alternating back-to-back blocks of trials (batch 2, 4, 3, 1) in one run, with the load average:
//   cold (SOUP_PROBE_WARM=0: a fresh child per trial, waited for until it exits), warm spare
//   waited for until it exits (SOUP_PROBE_END_ON_RESULT=0, the previous default) and warm spare
//   ended on its result (the default). Written to bench-results/probe-overhead-compare.json.
//
// The JSON is also written to bench-results/probe-vs-linear.json.
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { probeBatchSize } from '@soup/batch-probe';
import { createTrainStepProbe, deviceIdentity, type ProbeTrialOutcome } from '../src/index';
import { calibrateBudget } from './_calibrate';

const args = process.argv.slice(2);
const json = args.includes('--json');
const opt = (name: string, fallback: number): number => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? Number(args[i + 1]) : fallback;
};
const MiB = 2 ** 20;
const threads = opt('threads', 1);
const ceiling = opt('ceiling', 16);
const spec = { vocabSize: 256, seqLen: 128, dModel: 256, nHeads: 4, nLayers: 4 };
const budget = args.includes('--budget-mib')
  ? { calibrated: false as const, budgetBytes: opt('budget-mib', 0) * MiB }
  : {
      calibrated: true as const,
      ...(await calibrateBudget({
        spec,
        intraOpNumThreads: threads,
        targetBatch: Math.max(1, Math.floor(ceiling / 2)),
      })),
    };
const budgetMiB = Math.round((budget.budgetBytes / MiB) * 10) / 10;

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const round = (x: number, d = 1): number => Math.round(x * 10 ** d) / 10 ** d;

const phaseNames = ['parent', 'spawn', 'moduleLoad', 'runtime', 'session', 'batch', 'step', 'report', 'exit'] as const;
type Phases = Record<(typeof phaseNames)[number], number>;
const phasesOf = (os: ProbeTrialOutcome[]): Phases => {
  const w = os.filter((o) => o.phasesMs !== undefined);
  return Object.fromEntries(
    phaseNames.map((n) => [n, round(median(w.map((o) => (o.phasesMs as Record<string, number | undefined>)[n] ?? 0)))]),
  ) as Phases;
};
const load = () => loadavg().map((x) => round(x, 2));

if (args.includes('--compare')) {
  const rounds = opt('rounds', 3);
  const beforeAt = args.indexOf('--before-worker');
  const beforeWorker = beforeAt >= 0 ? args[beforeAt + 1] : undefined;
  const modes: Array<{ name: string; what: string; env: Record<string, string>; workerPath?: string }> = [
    ...(beforeWorker
      ? [
          {
            name: 'before',
            what:
              `the previous child (${beforeWorker}): warm spare, element-by-element fills, waited for until ` +
              `it exits`,
            env: { SOUP_PROBE_END_ON_RESULT: '0' },
            workerPath: beforeWorker,
          },
        ]
      : []),
    {
      name: 'cold',
      what: 'a fresh child per trial, waited for until it exits (SOUP_PROBE_WARM=0)',
      env: { SOUP_PROBE_WARM: '0', SOUP_PROBE_END_ON_RESULT: '0' },
    },
    {
      name: 'warmExit',
      what: 'warm spare, waited for until it exits (SOUP_PROBE_END_ON_RESULT=0)',
      env: { SOUP_PROBE_END_ON_RESULT: '0' },
    },
    { name: 'warmResult', what: 'warm spare, the trial ends on its result (default)', env: {} },
  ];
  const loadBefore = load();
  const probes = modes.map((m) =>
    createTrainStepProbe({
      spec,
      budgetBytes: budget.budgetBytes,
      intraOpNumThreads: threads,
      timeoutMs: 300_000,
      env: { ...process.env, ...m.env },
      ...(m.workerPath ? { workerPath: m.workerPath } : {}),
    }),
  );
  const got: Array<Array<ProbeTrialOutcome & { callMs: number }>> = modes.map(() => []);
  for (const p of probes) await p(1); // calibration and a first spare, not counted
  const block = [2, 4, 3, 1];
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < modes.length; k++) {
      const i = (k + r) % modes.length; // rotate which mode goes first
      for (const b of block) {
        const t = performance.now();
        const o = await probes[i]!(b);
        got[i]!.push({ ...o, callMs: performance.now() - t });
      }
    }
    if (!json) process.stderr.write(`round ${r + 1}/${rounds} done, load ${load().join(' ')}\n`);
  }
  const loadAfter = load();
  const stats = modes.map((m, i) => {
    const os = got[i]!.filter((o) => o.fits && o.stepMs !== undefined);
    return {
      mode: m.name,
      what: m.what,
      trials: os.length,
      overheadMsMedian: round(median(os.map((o) => o.overheadMs!))),
      overheadMsP90: round(
        [...os.map((o) => o.overheadMs!)].sort((a, b) => a - b)[Math.floor(os.length * 0.9)] ?? Number.NaN,
      ),
      callOverheadMsMedian: round(median(os.map((o) => o.callMs - o.stepMs!))),
      callMsMedian: round(median(os.map((o) => o.callMs))),
      stepMsMedian: round(median(os.map((o) => o.stepMs!))),
      phasesMedianMs: phasesOf(os),
      peaksMiB: os.map((o) => `${o.batchSize}:${round((o.peakBytes ?? 0) / MiB)}`).join(' '),
    };
  });
  const now = stats.find((x) => x.mode === 'warmResult')!;
  const result = {
    loadAvgBefore: loadBefore,
    loadAvgAfter: loadAfter,
    rounds,
    block,
    modes: stats,
    ratios: Object.fromEntries(stats.map((x) => [x.mode, round(x.overheadMsMedian / now.overheadMsMedian, 2)])),
    perTrialOverheadMs: now.overheadMsMedian,
    targetAtMost300: now.overheadMsMedian <= 300,
    geometry: { ...spec, intraOpNumThreads: threads },
    budgetBytes: budget.budgetBytes,
    budget,
    node: process.version,
  };
  const out = join(dirname(fileURLToPath(import.meta.url)), '..', 'bench-results', 'probe-overhead-compare.json');
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
  if (json) process.stdout.write(`${JSON.stringify(result)}\n`);
  else {
    console.log(
      `per-trial overhead, ${rounds} rounds of blocks ${block.join(', ')} per mode, alternating; load average ` +
        `before ${loadBefore.join(' ')}, after ${loadAfter.join(' ')}`,
    );
    console.log(`| mode | overhead median (p90) | ratio | call overhead | whole call | ${phaseNames.join(' | ')} |`);
    console.log(`|---|---|---|---|---|${phaseNames.map(() => '---').join('|')}|`);
    for (const x of stats) {
      console.log(
        `| ${x.mode} | ${x.overheadMsMedian} (${x.overheadMsP90}) | ${result.ratios[x.mode]} | ` +
          `${x.callOverheadMsMedian} | ${x.callMsMedian} | ` +
          `${phaseNames.map((n) => x.phasesMedianMs[n]).join(' | ')} |`,
      );
    }
    for (const x of stats) console.log(`${x.mode}: ${x.what}; peaks (batch:MiB) ${x.peaksMiB}`);
    console.log(`wrote ${out}`);
  }
  process.exit(0);
}

const probe = createTrainStepProbe({
  spec,
  budgetBytes: budget.budgetBytes,
  intraOpNumThreads: threads,
  timeoutMs: 300_000,
});
const outcomes: Array<ProbeTrialOutcome & { phase: string; callMs: number }> = [];
const record =
  (phase: string) =>
  async (b: number): Promise<ProbeTrialOutcome> => {
    const t = performance.now();
    const o = await probe(b);
    outcomes.push({ ...o, phase, callMs: performance.now() - t });
    return o;
  };
const loadBefore = load();

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
const phasesMedianMs = phasesOf(outcomes);
// What the caller feels: the whole probe call minus the step (calibration excluded: the first trial).
const callOverheads = outcomes
  .slice(1)
  .filter((o) => o.stepMs !== undefined)
  .map((o) => o.callMs - o.stepMs!);
const device = await deviceIdentity({ device: 'cpu' });
const result = {
  foundBatch: search.batchSize,
  linearScanBatch,
  trials: search.trials.length,
  probeSeconds: round(probeSeconds, 2),
  perTrialOverheadMs: round(median(overheads)),
  perTrialCallOverheadMs: round(median(callOverheads)),
  loadAvgBefore: loadBefore,
  loadAvgAfter: load(),
  perTrialOverheadP90Ms: round([...overheads].sort((a, b) => a - b)[Math.floor(overheads.length * 0.9)] ?? Number.NaN),
  medianStepMs: round(median(outcomes.map((o) => o.stepMs ?? 0))),
  phasesMedianMs,
  warmWorker: process.env.SOUP_PROBE_WARM !== '0',
  calibrationMs: round(outcomes.find((o) => o.calibrationMs !== undefined)?.calibrationMs ?? 0),
  linearTrials: outcomes.filter((o) => o.phase === 'linear').length,
  budgetBytes: budget.budgetBytes,
  budget,
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
  console.log(
    `cuda-probe bench: onnx-train geometry ${JSON.stringify(spec)}, CPU, ${threads} thread(s), ` +
      `budget ${budgetMiB} MiB` +
      (budget.calibrated
        ? ` (calibrated: ${budget.peakAtOneMiB} MiB at batch 1, ${budget.perSampleMiB} MiB per sample, ` +
          `edge aimed at ${budget.targetBatch})`
        : ''),
  );
  console.log('phase   batch  fits  reason       peak MiB  trial ms  step ms  overhead ms');
  for (const t of result.trialLog) {
    console.log(
      `${t.phase.padEnd(7)} ${String(t.batchSize).padStart(5)}  ${String(t.fits).padEnd(5)} ${t.reason.padEnd(12)}` +
        ` ${String(t.peakMiB).padStart(8)}  ${String(t.ms).padStart(8)}  ${String(t.stepMs).padStart(7)}  ` +
        `${String(t.overheadMs).padStart(11)}`,
    );
  }
  console.log('');
  console.log(`foundBatch          ${result.foundBatch}`);
  console.log(
    `linearScanBatch     ${result.linearScanBatch}   (` +
      `${result.foundBatch === result.linearScanBatch ? 'same' : 'DIFFERENT'})`,
  );
  console.log(`trials (search)     ${result.trials}`);
  console.log(`probeSeconds        ${result.probeSeconds}  (search, calibration included: ${result.calibrationMs} ms)`);
  console.log(
    `perTrialOverheadMs  ${result.perTrialOverheadMs} median, ${result.perTrialOverheadP90Ms} p90  (the child's ` +
      `wall time minus its step); whole call minus step ${result.perTrialCallOverheadMs}`,
  );
  console.log(`load average        before ${result.loadAvgBefore.join(' ')}, after ${result.loadAvgAfter.join(' ')}`);
  console.log(
    `where a trial's time goes (median ms): ${phaseNames.map((n) => `${n} ${phasesMedianMs[n]}`).join(', ')}`,
  );
  console.log(`wrote ${out}`);
}
