// Calibration of a train-step probe, inside the worker: builds @soup/onnx-train's fused
// training graph (grad-ckpt plan applied), writes it to the probe's temp file and creates its
// session with onnx-train's own session options (CommonSubexpressionElimination off, so the
// recompute copies survive). Every trial then runs that file with those same options as an
// ORT job, without importing onnx-train or rebuilding the graph (~60 ms per child).
//
// Not done on purpose: saving ORT's *optimised* graph and loading it with optimisation off.
// It halves session creation, but the reloaded graph plans memory differently: 175 MiB
// instead of 136 MiB for one step of the bench geometry at batch 8 (measured), so the probe
// would no longer measure what trains.
import { writeFileSync } from 'node:fs';
import type { OrtJob, OrtSessionJobOptions, SegmentedStepJob, TrainStepJob, WorkerJob } from './_protocol';

export interface TrainStepJobOptions {
  spec: Record<string, unknown>;
  recompute: string[];
  dtype?: 'float32' | 'float64';
  intraOpNumThreads?: number;
  enableCpuMemArena?: boolean;
  graphOptimizationLevel?: 'disabled' | 'basic' | 'extended' | 'all';
  /** Segmented execution only: where saved activations go (`cwd` resolved by the parent). */
  offload?: { target: 'keep' | 'cpu' | 'disk'; saveDir?: string; cwd: string };
}

type Ort = typeof import('onnxruntime-node');
type Session = Awaited<ReturnType<Ort['InferenceSession']['create']>>;

export async function prepareTrainStep(
  ort: Ort,
  job: WorkerJob,
  work: TrainStepJob,
): Promise<{ session: Session; prepared: OrtJob }> {
  const mod = await import('@soup/onnx-train');
  const o = work.step as unknown as TrainStepJobOptions;
  const spec = mod.defineGptSpec(o.spec as unknown as Parameters<typeof mod.defineGptSpec>[0]);
  const model = mod.buildTrainingModel({
    spec,
    recompute: o.recompute,
    mode: 'train',
    ...(o.dtype !== undefined ? { dtype: o.dtype } : {}),
  });
  const stepOptions = {
    executionProvider: job.device,
    deviceId: job.cuda?.deviceId ?? 0,
    ...(o.intraOpNumThreads !== undefined ? { intraOpNumThreads: o.intraOpNumThreads } : {}),
    ...(o.enableCpuMemArena !== undefined ? { enableCpuMemArena: o.enableCpuMemArena } : {}),
    ...(o.graphOptimizationLevel !== undefined ? { graphOptimizationLevel: o.graphOptimizationLevel } : {}),
  };
  writeFileSync(work.modelPath, model.bytes);
  const { executionProviders: _eps, ...rest } = mod.trainingSessionOptions(stepOptions);
  const session = await ort.InferenceSession.create(work.modelPath, mod.trainingSessionOptions(stepOptions));
  const prepared: OrtJob = {
    kind: 'ort',
    modelPath: work.modelPath,
    maxLength: spec.seqLen,
    padId: 0,
    vocabSize: spec.vocabSize,
    session: JSON.parse(JSON.stringify(rest)) as OrtSessionJobOptions,
    overrides: { [mod.tensorNames.lr]: 1e-3, [mod.tensorNames.step]: 1 },
  };
  return { session, prepared };
}

/**
 * A segmented step (activation offloading) cannot be replayed as one `session.run`: every
 * child, calibration included, builds onnx-train's SegmentedTrainStep (its config checked by
 * @soup/offload there, whose messages surface as the child's error) and a trial runs one real
 * step on a synthetic batch. The activation store is opened and closed inside the step, so no
 * scratch file outlives it; a child killed mid-step leaves files the next store sweeps.
 */
export async function prepareSegmentedStep(
  job: WorkerJob,
  work: SegmentedStepJob,
): Promise<{ feedBytes: number; batchedFeedBytes: number; notes: string[]; step: () => Promise<void> }> {
  const mod = await import('@soup/onnx-train');
  const o = work.step as unknown as TrainStepJobOptions;
  const spec = mod.defineGptSpec(o.spec as unknown as Parameters<typeof mod.defineGptSpec>[0]);
  const step = await mod.createTrainStep({
    spec,
    execution: 'segmented',
    recompute: o.recompute,
    executionProvider: job.device,
    deviceId: job.cuda?.deviceId ?? 0,
    ...(o.offload !== undefined ? { offload: o.offload } : {}),
    ...(o.dtype !== undefined ? { dtype: o.dtype } : {}),
    ...(o.intraOpNumThreads !== undefined ? { intraOpNumThreads: o.intraOpNumThreads } : {}),
    ...(o.enableCpuMemArena !== undefined ? { enableCpuMemArena: o.enableCpuMemArena } : {}),
    ...(o.graphOptimizationLevel !== undefined ? { graphOptimizationLevel: o.graphOptimizationLevel } : {}),
  });
  const batch = mod.makeSyntheticBatch({ spec, batchSize: job.batchSize });
  const feedBytes = batch.inputIds.byteLength + batch.labels.byteLength;
  return {
    feedBytes,
    batchedFeedBytes: feedBytes,
    notes: [`segmented step, offload target '${o.offload?.target ?? 'keep'}'`],
    step: async () => {
      await step.run(batch);
    },
  };
}
