// How much RLIMIT_AS does one probe step really need? For a few batch sizes of two models
// (the tiny MatMul model of the tests, the onnx-train bench geometry's training step) this runs
// the worker once without a limit (resident growth of the step, VmPeak growth) and then
// bisects the smallest address-space limit, above the child's baseline VmSize, at which the
// step still completes. The probe's sizing rule (2 x budget + 256 MiB + 64 MiB per thread
// above the baseline) must stay above every "needed" figure when budget = the step's growth.
//
//   npx tsx bench/address-space.ts [--json]     (writes bench-results/address-space.json)
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineGptSpec, trainingSessionOptions, writeTrainingModel } from '@soup/onnx-train';
import { runChild } from '../src/_child-runner';
import { buildLaunch } from '../src/_launch';
import type { OrtJob, WorkerJob, WorkerResult } from '../src/_protocol';
import { writeTinyModel } from '../src/_test-model';
import { resolveWorkerPath } from '../src/_worker-path';

const MiB = 2 ** 20;
const json = process.argv.includes('--json');
const worker = resolveWorkerPath();
const dir = mkdtempSync(join(tmpdir(), 'soup-as-bench-'));
const threads = 1;

async function step(work: OrtJob, batchSize: number, limit: number | null): Promise<WorkerResult | undefined> {
  const job: WorkerJob = { mode: 'step', batchSize, device: 'cpu', budgetBytes: 2 ** 40, cuda: null, work };
  const run = await runChild({
    launch: buildLaunch({ file: process.execPath, args: [worker], addressSpaceBytes: limit, allowShell: false }),
    timeoutMs: 120_000,
    input: JSON.stringify(job),
    resultChannel: true,
  });
  return run.result as WorkerResult | undefined;
}

const tiny: OrtJob = {
  kind: 'ort',
  modelPath: writeTinyModel({ path: join(dir, 'tiny.onnx') }),
  maxLength: 64,
  padId: 0,
  vocabSize: 256,
  session: { intraOpNumThreads: threads },
  overrides: {},
};
const spec = defineGptSpec({ vocabSize: 256, seqLen: 128, dModel: 256, nHeads: 4, nLayers: 4 });
const { executionProviders: _eps, ...trainSession } = trainingSessionOptions({ intraOpNumThreads: threads });
const train: OrtJob = {
  kind: 'ort',
  modelPath: writeTrainingModel(spec, join(dir, 'train.onnx')).path,
  maxLength: 128,
  padId: 0,
  vocabSize: 256,
  session: JSON.parse(JSON.stringify(trainSession)),
  overrides: { lr: 1e-3, step: 1 },
};

const rows: Array<Record<string, number | string>> = [];
try {
  for (const [name, work, batches] of [
    ['tiny MatMul (1 MiB/seq)', tiny, [8, 64, 200, 400, 800]],
    ['onnx-train step (bench geometry)', train, [1, 4, 8, 16]],
  ] as const) {
    for (const batch of batches) {
      const free = await step(work, batch, null);
      if (!free?.ok) throw new Error(`${name} batch ${batch} failed without a limit`);
      const growth = free.cpu.peakRssBytes - free.cpu.baselineRssBytes;
      const base = free.cpu.baselineVmBytes;
      let lo = 0;
      let hi = Math.ceil((free.cpu.vmPeakBytes - base) / MiB) + 64;
      while (hi - lo > 4) {
        const mid = (lo + hi) >> 1;
        const r = await step(work, batch, base + mid * MiB);
        if (r?.ok) hi = mid;
        else lo = mid;
      }
      const rule = (2 * growth) / MiB + 256 + 64 * threads;
      rows.push({
        model: name,
        batch,
        baselineVmMiB: Math.round(base / MiB),
        rssGrowthMiB: Math.round((growth / MiB) * 10) / 10,
        vmPeakGrowthMiB: Math.round(((free.cpu.vmPeakBytes - base) / MiB) * 10) / 10,
        neededAboveBaselineMiB: hi,
        neededOverGrowth: Math.round((hi / (growth / MiB)) * 100) / 100,
        ruleAboveBaselineMiB: Math.round(rule),
      });
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const result = { threads, node: process.version, rows };
const out = join(dirname(fileURLToPath(import.meta.url)), '..', 'bench-results', 'address-space.json');
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
if (json) process.stdout.write(`${JSON.stringify(result)}\n`);
else {
  console.log('model                              batch  RSS growth  VmPeak growth  needed AS  needed/growth  rule');
  for (const r of rows) {
    console.log(
      `${String(r.model).padEnd(34)} ${String(r.batch).padStart(5)}  ${String(r.rssGrowthMiB).padStart(10)}  ` +
        `${String(r.vmPeakGrowthMiB).padStart(13)}  ${String(r.neededAboveBaselineMiB).padStart(9)}  ` +
        `${String(r.neededOverGrowth).padStart(13)}  ${String(r.ruleAboveBaselineMiB).padStart(4)}`,
    );
  }
  console.log(`(MiB above the child's baseline VmSize; ${threads} intra-op thread; wrote ${out})`);
}
