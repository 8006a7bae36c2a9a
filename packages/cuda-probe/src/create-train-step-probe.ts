import type { TrainStepJobOptions } from './_train-step-runner';
import { integerAtLeast, oneOf, optionalBoolean, requireObject } from './_validate';
import { resolveWorkerOptions, workerLaunch, type WorkerProbeOptions } from './_worker-options';
import { createWorkerProbe } from './_worker-probe';
import { assertPeers } from './_peer';
import { ProbeOptionsError } from './errors';
import type { ChildProbeFn } from './types';

/**
 * The geometry of the @soup/onnx-train GPT to probe (its `GptSpec`, restated here so this package's
 * types need no optional peer installed).
 */
export interface ProbeGptSpec {
  vocabSize: number;
  seqLen: number;
  dModel: number;
  nHeads: number;
  nLayers: number;
  /** @default 4 * dModel */
  dFF?: number;
  /** @default true */
  tieEmbeddings?: boolean;
}

/** Options of {@link createTrainStepProbe}. */
export interface CreateTrainStepProbeOptions extends WorkerProbeOptions {
  /**
   * The model to probe (`dFF` and `tieEmbeddings` may be left out: onnx-train's defaults). Its
   * `seqLen` is the sequence length of the synthetic batch and must be at least 8.
   */
  spec: ProbeGptSpec;
  /**
   * Gradient-checkpointing plan: the modules whose forward is recomputed in the backward
   * (`planCheckpoint(moduleNames(spec), tier)` of @soup/grad-ckpt).
   * @default [] (no recompute)
   */
  plan?: readonly string[];
  /**
   * Activation offloading. `'cpu'` / `'disk'` probe onnx-train's segmented step (a session for
   * the segments, each block's saved activations through an activation store), built in every
   * child; `'disk'` needs `saveDir`, resolved against `cwd` and kept under it (checked by
   * @soup/offload in the child: a refusal is a `ProbeChildError` with its message). `'cpu'` is a
   * CUDA option: on a CPU device the check refuses it. `{target: 'keep'}` is the fused step.
   * @default undefined (fused step)
   */
  offload?: { target: 'keep' | 'cpu' | 'disk'; saveDir?: string };
  /** @default 'float32' */
  dtype?: 'float32' | 'float64';
  /** Intra-op threads of the step's session. @default onnxruntime's default */
  intraOpNumThreads?: number;
  /** ORT's CPU arena. @default true */
  enableCpuMemArena?: boolean;
  /** @default 'all' */
  graphOptimizationLevel?: 'disabled' | 'basic' | 'extended' | 'all';
}

const SPEC_INTS = ['vocabSize', 'seqLen', 'dModel', 'nHeads', 'nLayers'] as const;

/**
 * A probe that runs ONE @soup/onnx-train training step (forward + backward + AdamW, with the
 * grad-ckpt plan applied) per candidate batch size, each in a fresh Node child, with the same
 * budget, peak gate and classification as {@link createOrtProbe}: what `soup` probes is what
 * it will train.
 *
 * @throws {ProbeOptionsError} a bad option (its `field` names it); the spec is checked in full by
 *   onnx-train in the first child, whose refusal surfaces as `ProbeChildError`
 */
export function createTrainStepProbe(options: CreateTrainStepProbeOptions): ChildProbeFn {
  const o = requireObject('options', options) as unknown as CreateTrainStepProbeOptions;
  assertPeers('createTrainStepProbe', ['onnxruntime-node', '@soup/onnx-train']);
  const spec = requireObject('spec', o.spec);
  for (const k of SPEC_INTS) integerAtLeast(`spec.${k}`, spec[k], k === 'seqLen' ? 8 : 1);
  if (spec.dFF !== undefined) integerAtLeast('spec.dFF', spec.dFF, 1);
  optionalBoolean('spec.tieEmbeddings', spec.tieEmbeddings);
  let plan: string[] = [];
  if (o.plan !== undefined) {
    if (!Array.isArray(o.plan) || !o.plan.every((p) => typeof p === 'string')) {
      throw new ProbeOptionsError(
        'plan must be an array of module names (e.g. ["h.0", "h.2"]), as planCheckpoint returns',
        { field: 'plan' },
      );
    }
    plan = [...o.plan];
  }
  const step: TrainStepJobOptions = { spec: { ...spec }, recompute: plan };
  if (o.offload !== undefined) {
    const off = requireObject('offload', o.offload);
    const target = oneOf('offload.target', off.target, ['keep', 'cpu', 'disk'] as const, 'keep');
    if (off.saveDir !== undefined && typeof off.saveDir !== 'string')
      throw new ProbeOptionsError('offload.saveDir must be a path (a scratch directory under cwd)', {
        field: 'offload.saveDir',
      });
    if (target === 'disk' && !off.saveDir) {
      throw new ProbeOptionsError(
        "offload.target 'disk' needs offload.saveDir: a scratch directory under the working directory",
        { field: 'offload.saveDir' },
      );
    }
    if (target !== 'keep')
      step.offload = {
        target,
        ...(off.saveDir ? { saveDir: off.saveDir as string } : {}),
        cwd: o.cwd ?? process.cwd(),
      };
  }
  if (o.dtype !== undefined) step.dtype = oneOf('dtype', o.dtype, ['float32', 'float64'] as const, 'float32');
  if (o.intraOpNumThreads !== undefined)
    step.intraOpNumThreads = integerAtLeast('intraOpNumThreads', o.intraOpNumThreads, 1);
  const arena = optionalBoolean('enableCpuMemArena', o.enableCpuMemArena);
  if (arena !== undefined) step.enableCpuMemArena = arena;
  if (o.graphOptimizationLevel !== undefined) {
    step.graphOptimizationLevel = oneOf(
      'graphOptimizationLevel',
      o.graphOptimizationLevel,
      ['disabled', 'basic', 'extended', 'all'] as const,
      'all',
    );
  }
  const r = resolveWorkerOptions(o);
  return createWorkerProbe({
    what: 'train-step probe child',
    ...workerLaunch(r),
    work: step.offload
      ? {
          kind: 'segmented-step',
          step: step as unknown as Record<string, unknown>,
          maxLength: spec.seqLen as number,
          vocabSize: spec.vocabSize as number,
        }
      : {
          kind: 'train-step',
          step: step as unknown as Record<string, unknown>,
          modelPath: '', // a temp file, chosen when the first (calibration) child is sent
          maxLength: spec.seqLen as number,
          padId: 0,
          vocabSize: spec.vocabSize as number,
        },
    threads: step.intraOpNumThreads,
  });
}
