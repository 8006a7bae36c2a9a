// Where a segmented step's time goes, beside a fused step at the same batch (no memory cap):
//   node packages/offload/bench/profile-step.mjs [--batch 16] [--steps 5] [--threads 2] [--modes fused,keep,disk]
//
// Per mode, one child process each (so one mode's allocations do not shape the next one's), a
// warm-up step and --steps timed steps, and the median of each figure:
// - the Node-side split: the step's wall time, the time inside `session.run` (ONNX Runtime + the
//   binding's input wrapping and output copies), the number of runs, and what is left (JavaScript
//   between runs: feeds, the store, the gradient bookkeeping); for the segmented modes the step's
//   own phase timings (forward / head / backward / optimizer, pack / unpack);
// - ORT's profiler over the same timed steps: `model_run` (the runtime's time per step) and the
//   summed kernel time per operator type. A segmented step refuses `profileFilePrefix` (it runs a
//   dozen segments), so this script turns profiling on by wrapping `InferenceSession.create`.
// Plain JavaScript (no TypeScript loader); '@soup/onnx-train' resolves through the workspace's
// node_modules (build it first: npx turbo run build --filter=@soup/onnx-train...).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : def;
};
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const round = (x) => Math.round(x);

if (args[0] === '--child') {
  const cfg = JSON.parse(args[1]);
  const { default: ort } = await import('onnxruntime-node');
  const { createTrainStep, defineGptSpec, makeSyntheticBatch } = await import('@soup/onnx-train');
  const work = mkdtempSync(join(tmpdir(), 'soup-profile-step-'));
  process.chdir(work);
  try {
    const create = ort.InferenceSession.create;
    const sessions = [];
    ort.InferenceSession.create = async function (model, options) {
      const session = await create.call(this, model, {
        ...options,
        enableProfiling: true,
        profileFilePrefix: join(work, 'ort'),
      });
      sessions.push(session);
      return session;
    };
    let runMs = 0;
    let runs = 0;
    const run = ort.InferenceSession.prototype.run;
    ort.InferenceSession.prototype.run = async function (...a) {
      const t = performance.now();
      try {
        return await run.apply(this, a);
      } finally {
        runMs += performance.now() - t;
        runs += 1;
      }
    };
    const spec = defineGptSpec(cfg.spec);
    const step = await createTrainStep({
      spec,
      seed: 0,
      intraOpNumThreads: cfg.threads,
      execution: cfg.mode === 'fused' ? 'fused' : 'segmented',
      ...(cfg.mode === 'disk' ? { offload: { target: 'disk', saveDir: '.soup-acts' } } : {}),
    });
    const batch = makeSyntheticBatch({ spec, batchSize: cfg.batchSize, seed: 1 });
    await step.run(batch); // warm-up
    const warmRuns = runs;
    const rows = [];
    for (let i = 0; i < cfg.steps; i++) {
      runMs = 0;
      runs = 0;
      const c0 = process.cpuUsage();
      const r = await step.run(batch);
      const c = process.cpuUsage(c0);
      const s = step.lastStepStats;
      rows.push({
        stepMs: r.totalMs,
        sessionRunMs: runMs,
        runs,
        betweenRunsMs: r.totalMs - runMs,
        cpuMs: (c.user + c.system) / 1000,
        ...(s
          ? {
              forwardMs: s.forwardMs,
              headMs: s.headMs,
              backwardMs: s.backwardMs,
              optimizerMs: s.optimizerMs,
              packMs: s.packMs,
              unpackMs: s.unpackMs,
            }
          : {}),
      });
    }
    for (const session of sessions) session.endProfiling(); // writes each session's profile file
    await step.release();
    const events = readdirSync(work)
      .filter((f) => f.startsWith('ort') && f.endsWith('.json'))
      .flatMap((f) => JSON.parse(readFileSync(join(work, f), 'utf8')));
    // Skip the warm-up: the first `warmRuns` model_run events of the step's session(s).
    const modelRuns = events.filter((e) => e.cat === 'Session' && e.name === 'model_run').sort((a, b) => a.ts - b.ts);
    const from = modelRuns[warmRuns]?.ts ?? 0;
    let modelRunUs = 0;
    const kernelUs = {};
    for (const e of events) {
      if (e.ts < from) continue;
      if (e.cat === 'Session' && e.name === 'model_run') modelRunUs += e.dur;
      if (e.cat === 'Node' && e.name.endsWith('_kernel_time'))
        kernelUs[e.args.op_name] = (kernelUs[e.args.op_name] ?? 0) + e.dur;
    }
    const perStep = (us) => us / 1000 / cfg.steps;
    const keys = Object.keys(rows[0]);
    console.log(
      JSON.stringify({
        mode: cfg.mode,
        median: Object.fromEntries(keys.map((k) => [k, median(rows.map((r) => r[k]))])),
        stepTimesMs: rows.map((r) => round(r.stepMs)),
        ort: {
          modelRunMsPerStep: perStep(modelRunUs),
          // `If` wraps each segment of the segmented step's one session: its time includes the kernels inside.
          kernelMsPerStepExcludingIf: perStep(
            Object.entries(kernelUs).reduce((n, [k, v]) => n + (k === 'If' ? 0 : v), 0),
          ),
          byOp: Object.fromEntries(
            Object.entries(kernelUs)
              .sort((a, b) => b[1] - a[1])
              .slice(0, 8)
              .map(([k, v]) => [k, round(perStep(v))]),
          ),
        },
      }),
    );
  } finally {
    process.chdir(tmpdir());
    rmSync(work, { recursive: true, force: true });
  }
  process.exit(0);
}

const cfg = {
  spec: { vocabSize: 256, seqLen: 128, dModel: 256, nHeads: 4, nLayers: 4, dFF: 1024, tieEmbeddings: true },
  batchSize: Number(opt('--batch', '16')),
  steps: Number(opt('--steps', '5')),
  threads: Number(opt('--threads', '2')),
};
const modes = opt('--modes', 'fused,keep,disk').split(',');
const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
console.log(
  `batch ${cfg.batchSize}, ${cfg.threads} threads, median of ${cfg.steps} steps after a warm-up; load average ` +
    `${load()}`,
);
const results = [];
for (const mode of modes) {
  const out = execFileSync(
    process.execPath,
    [fileURLToPath(import.meta.url), '--child', JSON.stringify({ ...cfg, mode })],
    { encoding: 'utf8' },
  );
  results.push(JSON.parse(out.trim().split('\n').at(-1)));
}
const fused = results.find((r) => r.mode === 'fused');
for (const r of results) {
  const m = r.median;
  console.log(
    `${r.mode.padEnd(6)} step ${round(m.stepMs)} ms (${r.stepTimesMs.join(', ')})` +
      `${fused && r !== fused ? ` = ${(m.stepMs / fused.median.stepMs).toFixed(2)}× fused` : ''}; ` +
      `${m.runs} session.run: ${round(m.sessionRunMs)} ms, between runs ${round(m.betweenRunsMs)} ms; CPU ` +
      `${round(m.cpuMs)} ms` +
      (m.forwardMs !== undefined
        ? `; forward ${round(m.forwardMs)}, head ${round(m.headMs)}, backward ${round(m.backwardMs)}, optimizer ` +
          `${round(m.optimizerMs)}, pack ${round(m.packMs)}, unpack wait ${round(m.unpackMs)}`
        : ''),
  );
  console.log(
    `       ORT: model_run ${round(r.ort.modelRunMsPerStep)} ms/step, kernels ` +
      `${round(r.ort.kernelMsPerStepExcludingIf)} ms/step; binding (session.run − model_run) ` +
      `${round(m.sessionRunMs - r.ort.modelRunMsPerStep)} ms/step; ` +
      Object.entries(r.ort.byOp)
        .map(([k, v]) => `${k} ${v}`)
        .join(', '),
  );
}
console.log(`load average after: ${load()}`);
