// The probe child (built to dist/worker.js). Reads one WorkerJob on stdin, prepares the
// session and the synthetic batch, measures the baseline, runs ONE step, measures the peak,
// writes one WorkerResult as JSON on fd 3 and exits. A hard failure (allocation refused under
// RLIMIT_AS, a native abort, the OOM killer) ends the process: the parent classifies it.
import { closeSync, readFileSync, writeSync } from 'node:fs';
import type { CudaMeasurement, OrtJob, WorkerFailure, WorkerJob, WorkerResult, WorkerSuccess } from './_protocol';
import { gpuSnapshot, type GpuSnapshot } from './_nvidia-smi';
import { judgeGpu } from './_gpu-measure';
import { readProcStatus, resetPeakRss } from './_proc';
import { makeTensor } from './_feed-tensor';
import { planBytes, planFeeds } from './_synthetic-feeds';
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
  // Closing fd 3 tells the parent the result is complete: it may end the trial there rather than
  // wait for this process to tear the runtime down.
  closeSync(3);
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
    throw new Error(
      `onnxruntime-node is not installed (an optional peer dependency of @soup/cuda-probe): npm install ` +
        `onnxruntime-node@1.30.0`,
      { cause: err },
    );
  });
  runtimeAt = epoch();
  // No telemetry files per probe child unless the user set ORT_DISABLE_TELEMETRY (as @soup/onnx-train's sessions),
  // whichever kind of session the job creates below.
  process.env.ORT_DISABLE_TELEMETRY ??= '1';
  const work = job.work;
  if (work.kind === 'segmented-step') {
    const { prepareSegmentedStep } = await import('./_train-step-runner');
    return prepareSegmentedStep(job, work);
  }
  if (work.kind === 'train-step') {
    if (job.mode !== 'calibrate')
      throw new Error('a train-step job runs as calibration only; trials run its prepared model');
    const { prepareTrainStep } = await import('./_train-step-runner');
    const { session, prepared } = await prepareTrainStep(ort, job, work);
    return { ...runnerFor(ort, job, session, prepared), prepared };
  }
  const session = await ort.InferenceSession.create(work.modelPath, {
    ...work.session,
    executionProviders: providers(job),
  });
  sessionAt = epoch();
  // A warm child: the session (which does not depend on the batch size) is ready before the
  // trial's batch size arrives; the batch is built only then.
  if (warmBatch) {
    job.batchSize = await warmBatch();
    jobAt = epoch();
  }
  return runnerFor(ort, job, session, work);
}

/**
 * Warm mode (`SOUP_PROBE_WARM=1`, CPU ORT jobs only): stdin carries the job's JSON on its first
 * line, then — when the parent hands this child its trial — the batch size on the second. The
 * child imports the runtime and creates the session meanwhile. Each trial is still its own fresh
 * process. A spare never handed a trial exits by itself after `SOUP_PROBE_WARM_IDLE_MS`.
 */
let warmBatch: (() => Promise<number>) | null = null;

function readWarmStdin(): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = '';
    let lines = 0;
    let second: ((n: number) => void) | null = null;
    let secondReject: ((e: Error) => void) | null = null;
    let pendingBatch: number | null = null;
    const idle = setTimeout(() => process.exit(0), Number(process.env.SOUP_PROBE_WARM_IDLE_MS ?? 60_000));
    warmBatch = () =>
      new Promise<number>((res, rej) => {
        if (pendingBatch !== null) res(pendingBatch);
        else {
          second = res;
          secondReject = rej;
        }
      });
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (d: string) => {
      buf += d;
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        lines += 1;
        if (lines === 1) resolve(line);
        else if (lines === 2) {
          clearTimeout(idle);
          const n = Number(line);
          if (second) second(n);
          else pendingBatch = n;
        }
      }
    });
    process.stdin.on('end', () => {
      if (lines < 1) reject(new Error('warm probe child: no job on stdin'));
      else if (lines < 2) {
        // The parent went away or dropped this spare.
        clearTimeout(idle);
        if (secondReject) (secondReject as (e: Error) => void)(new Error('warm probe child: no batch size'));
        process.exit(0);
      }
    });
  });
}

type Reading = GpuSnapshot | { why: string };

async function gpuReading(job: WorkerJob): Promise<Reading> {
  const r = await gpuSnapshot(job.cuda!.nvidiaSmiPath, job.cuda!.deviceId, process.pid, process.env);
  return r.ok ? r.value : { why: r.why };
}

const epoch = (): number => performance.timeOrigin + performance.now();
const mainAt = epoch();
let runtimeAt = 0;
let sessionAt = 0;

let jobAt = 0;

async function main(): Promise<number> {
  const job = JSON.parse(
    process.env.SOUP_PROBE_WARM === '1' ? await readWarmStdin() : readFileSync(0, 'utf8'),
  ) as WorkerJob;
  jobAt = epoch();
  if (process.env.SOUP_PROBE_WARM === '1' && (job.work.kind !== 'ort' || job.device !== 'cpu' || job.mode !== 'step')) {
    throw new Error('warm mode is for CPU ORT step jobs only');
  }
  let phase: WorkerFailure['phase'] = 'setup';
  try {
    const measureGpu = job.device === 'cuda' && job.mode === 'step';
    // The device before this process loads anything: the baseline of the device-level delta.
    const gpuStart = measureGpu ? await gpuReading(job) : null;
    const runner = await prepare(job);
    const readyAt = epoch();
    const gpuPre = measureGpu ? await gpuReading(job) : null;
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
      if (gpuStart && gpuPre) {
        const v = judgeGpu({
          start: gpuStart,
          pre: gpuPre,
          post: await gpuReading(job),
          gpuMemLimitBytes: job.cuda!.gpuMemLimitBytes,
        });
        cuda = {
          budgetBytes: v.budgetBytes,
          peakBytes: v.peakBytes,
          measurement: v.measurement,
          ...(v.deviceFull ? { deviceFull: true } : {}),
          ...(v.note ? { note: v.note } : {}),
        };
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
      marks: {
        processStart: performance.timeOrigin,
        main: mainAt,
        jobRead: jobAt,
        runtime: runtimeAt || jobAt,
        session: sessionAt || readyAt,
        ready: readyAt,
        sent: epoch(),
      },
    };
    send(result);
    return 0;
  } catch (err) {
    const e = err instanceof Error ? err : new Error(String(err));
    // The message goes to stderr too, so a parent that only sees output can still classify it.
    process.stderr.write(`soup probe worker: ${phase} failed: ${e.message}\n`);
    send({
      ok: false,
      pid: process.pid,
      phase,
      error: { name: e.name, message: e.message, ...(e.stack ? { stack: e.stack } : {}) },
    });
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
