// The probe child (built to dist/worker.js). Reads one WorkerJob on stdin, prepares the
// session and the synthetic batch, measures the baseline, runs ONE step, measures the peak,
// writes one WorkerResult as JSON on fd 3 and exits. A hard failure (allocation refused under
// RLIMIT_AS, a native abort, the OOM killer) ends the process: the parent classifies it.
import { readFileSync, writeSync } from 'node:fs';
import type { CudaMeasurement, OrtJob, WorkerFailure, WorkerJob, WorkerResult, WorkerSuccess } from './_protocol';
import { processGpuUsage } from './_nvidia-smi';
import { readProcStatus, resetPeakRss } from './_proc';
import { type FeedPlan, planBytes, planFeeds } from './_synthetic-feeds';
import { reachableMemory } from './reachable-memory';

type Ort = typeof import('onnxruntime-node');
type Tensor = InstanceType<Ort['Tensor']>;
type Session = Awaited<ReturnType<Ort['InferenceSession']['create']>>;
type InferenceSessionOptions = import('onnxruntime-node').InferenceSession.SessionOptions;

interface Runner {
  feedBytes: number;
  batchedFeedBytes: number;
  notes: string[];
  step: () => Promise<void>;
}

function send(result: WorkerResult): void {
  writeSync(3, JSON.stringify(result));
}

function makeTensor(ort: Ort, plan: FeedPlan): Tensor {
  const n = plan.dims.reduce((a, b) => a * b, 1);
  const last = plan.dims[plan.dims.length - 1] ?? 1;
  const value = (i: number): number => (plan.fill.kind === 'arange' ? i % last : plan.fill.value);
  const fillNum = <T extends { [i: number]: number }>(arr: T): T => {
    for (let i = 0; i < n; i++) arr[i] = value(i);
    return arr;
  };
  const fillBig = <T extends { [i: number]: bigint }>(arr: T): T => {
    for (let i = 0; i < n; i++) arr[i] = BigInt(value(i));
    return arr;
  };
  switch (plan.type) {
    case 'int64':
      return new ort.Tensor('int64', fillBig(new BigInt64Array(n)), plan.dims);
    case 'uint64':
      return new ort.Tensor('uint64', fillBig(new BigUint64Array(n)), plan.dims);
    case 'int32':
      return new ort.Tensor('int32', fillNum(new Int32Array(n)), plan.dims);
    case 'uint32':
      return new ort.Tensor('uint32', fillNum(new Uint32Array(n)), plan.dims);
    case 'int16':
      return new ort.Tensor('int16', fillNum(new Int16Array(n)), plan.dims);
    case 'uint16':
      return new ort.Tensor('uint16', fillNum(new Uint16Array(n)), plan.dims);
    case 'int8':
      return new ort.Tensor('int8', fillNum(new Int8Array(n)), plan.dims);
    case 'uint8':
      return new ort.Tensor('uint8', fillNum(new Uint8Array(n)), plan.dims);
    case 'float32':
      return new ort.Tensor('float32', fillNum(new Float32Array(n)), plan.dims);
    case 'float64':
      return new ort.Tensor('float64', fillNum(new Float64Array(n)), plan.dims);
    case 'float16':
      if (plan.fill.kind !== 'constant' || plan.fill.value !== 0) throw new Error(`float16 input "${plan.name}" can only be fed zeros`);
      return new ort.Tensor('float16', new Uint16Array(n), plan.dims); // 0x0000 is +0.0
    case 'bool':
      return new ort.Tensor('bool', new Uint8Array(n).fill(plan.fill.kind === 'constant' ? plan.fill.value : 0), plan.dims);
    default:
      throw new Error(`model input "${plan.name}" has type ${plan.type}, which onnxruntime-node cannot feed`);
  }
}

function providers(job: WorkerJob): InferenceSessionOptions['executionProviders'] {
  return job.device === 'cuda' ? [{ name: 'cuda', deviceId: job.cuda?.deviceId ?? 0 }] : ['cpu'];
}

function runnerFor(ort: Ort, job: WorkerJob, session: Session, work: OrtJob): Runner {
  const { feeds: plans, notes } = planFeeds(session.inputMetadata, {
    batchSize: job.batchSize,
    maxLength: work.maxLength,
    padId: work.padId,
    vocabSize: work.vocabSize,
    overrides: work.overrides,
  });
  const feeds: Record<string, Tensor> = {};
  for (const p of plans) feeds[p.name] = makeTensor(ort, p);
  return {
    feedBytes: planBytes(plans),
    batchedFeedBytes: planBytes(plans, true),
    notes,
    step: async () => {
      await session.run(feeds);
    },
  };
}

async function prepare(job: WorkerJob): Promise<Runner & { prepared?: OrtJob }> {
  const ort: Ort = await import('onnxruntime-node').catch((err: unknown) => {
    throw new Error(`onnxruntime-node is not installed (an optional peer dependency of @soup/cuda-probe): npm install onnxruntime-node@1.30.0`, { cause: err });
  });
  const work = job.work;
  if (work.kind === 'segmented-step') {
    const { prepareSegmentedStep } = await import('./_train-step-runner');
    return prepareSegmentedStep(job, work);
  }
  if (work.kind === 'train-step') {
    if (job.mode !== 'calibrate') throw new Error('a train-step job runs as calibration only; trials run its prepared model');
    const { prepareTrainStep } = await import('./_train-step-runner');
    const { session, prepared } = await prepareTrainStep(ort, job, work);
    return { ...runnerFor(ort, job, session, prepared), prepared };
  }
  const session = await ort.InferenceSession.create(work.modelPath, { ...work.session, executionProviders: providers(job) });
  return runnerFor(ort, job, session, work);
}

async function cudaBefore(job: WorkerJob): Promise<{ budgetBytes: number | null; note?: string }> {
  const cuda = job.cuda!;
  const mine = await processGpuUsage(cuda.nvidiaSmiPath, cuda.deviceId, process.pid);
  let driverBudget: number | null = null;
  let note: string | undefined;
  if (!mine.ok) note = `cannot read this process's GPU memory: ${mine.why}`;
  else if (mine.value.gpu.freeBytes === null) note = 'the driver does not report free memory';
  // Not listed yet: the process holds nothing on the device, so all it can reach is the free memory.
  else driverBudget = mine.value.gpu.freeBytes + mine.value.usedBytes;
  const limit = cuda.gpuMemLimitBytes;
  const budgetBytes = limit === null ? driverBudget : driverBudget === null ? limit : Math.min(limit, driverBudget);
  return { budgetBytes, ...(note ? { note } : {}) };
}

async function cudaAfter(job: WorkerJob): Promise<{ peakBytes: number | null; note?: string }> {
  const mine = await processGpuUsage(job.cuda!.nvidiaSmiPath, job.cuda!.deviceId, process.pid);
  if (!mine.ok) return { peakBytes: null, note: `cannot read this process's GPU memory after the step: ${mine.why}` };
  if (!mine.value.listed) {
    return { peakBytes: null, note: `nvidia-smi does not list this process (pid ${process.pid}) after the step (another PID namespace?)` };
  }
  return { peakBytes: mine.value.usedBytes };
}

async function main(): Promise<number> {
  const job = JSON.parse(readFileSync(0, 'utf8')) as WorkerJob;
  let phase: WorkerFailure['phase'] = 'setup';
  try {
    const runner = await prepare(job);
    const cudaPre = job.device === 'cuda' && job.mode === 'step' ? await cudaBefore(job) : null;
    const budget = job.budgetBytes !== null ? { bytes: job.budgetBytes, source: 'given' as const } : reachableMemory();
    const peakReset = resetPeakRss();
    const before = readProcStatus();
    if (!before) throw new Error('cannot read /proc/self/status: the CPU probe needs Linux');
    const setupMs = performance.now();
    let stepMs = 0;
    let after = before;
    let cuda: CudaMeasurement | null = null;
    if (job.mode === 'step') {
      phase = 'step';
      const t0 = performance.now();
      await runner.step();
      stepMs = performance.now() - t0;
      after = readProcStatus() ?? before;
      if (cudaPre) {
        const post = await cudaAfter(job);
        const notes = [cudaPre.note, post.note].filter(Boolean);
        cuda = { budgetBytes: cudaPre.budgetBytes, peakBytes: post.peakBytes, ...(notes.length ? { note: notes.join('; ') } : {}) };
      }
    }
    const result: WorkerSuccess = {
      ok: true,
      mode: job.mode,
      pid: process.pid,
      setupMs,
      stepMs,
      feedBytes: runner.feedBytes,
      batchedFeedBytes: runner.batchedFeedBytes,
      cpu: {
        baselineVmBytes: before.vmSizeBytes,
        baselineRssBytes: before.vmRssBytes,
        peakRssBytes: after.vmHwmBytes,
        vmPeakBytes: after.vmPeakBytes,
        peakReset,
        budgetBytes: budget.bytes,
        budgetSource: budget.source,
      },
      cuda,
      notes: runner.notes,
      ...(runner.prepared ? { prepared: runner.prepared } : {}),
    };
    send(result);
    return 0;
  } catch (err) {
    const e = err instanceof Error ? err : new Error(String(err));
    // The message goes to stderr too, so a parent that only sees output can still classify it.
    process.stderr.write(`soup probe worker: ${phase} failed: ${e.message}\n`);
    send({ ok: false, pid: process.pid, phase, error: { name: e.name, message: e.message, ...(e.stack ? { stack: e.stack } : {}) } });
    return 1;
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`soup probe worker: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(70);
  },
);
