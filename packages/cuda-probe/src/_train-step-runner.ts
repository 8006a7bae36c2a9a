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
import type { OrtJob, OrtSessionJobOptions, TrainStepJob, WorkerJob } from './_protocol';

export interface TrainStepJobOptions {
  spec: Record<string, unknown>;
  recompute: string[];
  dtype?: 'float32' | 'float64';
  intraOpNumThreads?: number;
  enableCpuMemArena?: boolean;
  graphOptimizationLevel?: 'disabled' | 'basic' | 'extended' | 'all';
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
  const model = mod.buildTrainingModel({ spec, recompute: o.recompute, mode: 'train', ...(o.dtype !== undefined ? { dtype: o.dtype } : {}) });
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
