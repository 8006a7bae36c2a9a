import { buildLaunch } from './src/_launch';
import { runChild } from './src/_child-runner';
import type { WorkerJob, WorkerResult } from './src/_protocol';
const MiB = 2 ** 20;
const worker = './dist/worker.js';
async function run(batch: number, threads: number, limit: number | null) {
  const job: WorkerJob = { mode: 'step', batchSize: batch, device: 'cpu', budgetBytes: 2 ** 40, cuda: null,
    work: { kind: 'ort', modelPath: '/tmp/cp/tiny2.onnx', maxLength: 64, padId: 0, vocabSize: 256, session: { intraOpNumThreads: threads } } };
  const r = await runChild({ launch: buildLaunch({ file: process.execPath, args: [worker], addressSpaceBytes: limit, allowShell: false }), timeoutMs: 60000, input: JSON.stringify(job), resultChannel: true });
  return r.result as WorkerResult | undefined;
}
for (const threads of [1, 2]) for (const batch of [8, 64, 200, 400, 800]) {
  const free = await run(batch, threads, null);
  if (!free?.ok) { console.log('fail', batch); continue; }
  const growth = free.cpu.peakRssBytes - free.cpu.baselineRssBytes;
  const vmGrowth = free.cpu.vmPeakBytes - free.cpu.baselineVmBytes;
  let lo = free.cpu.baselineVmBytes / MiB | 0, hi = (free.cpu.vmPeakBytes / MiB | 0) + 64;
  while (hi - lo > 4) { const mid = (lo + hi) >> 1; const r = await run(batch, threads, mid * MiB); if (r?.ok) hi = mid; else lo = mid; }
  const needAbove = hi - free.cpu.baselineVmBytes / MiB;
  console.log(JSON.stringify({ threads, batch, rssGrowthMiB: +(growth / MiB).toFixed(1), vmPeakGrowthMiB: +(vmGrowth / MiB).toFixed(1), minLimitAboveBaselineMiB: +needAbove.toFixed(0), ratio: +(needAbove / (growth / MiB)).toFixed(2), ruleAboveBaselineMiB: 2 * growth / MiB + 256 + 64 * threads }));
}
