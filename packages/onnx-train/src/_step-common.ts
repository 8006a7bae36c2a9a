// What the fused `TrainStep` and the `SegmentedTrainStep` share: option and input checks, the
// parameter / AdamW-moment state map (start, copies, resume) and the step's result.
import ort from 'onnxruntime-node';
import type { FloatDType } from './_graph';
import { TrainInputError } from './errors';
import type { GptSpec } from './gpt-spec';
import { initParameters, type FloatArray } from './init-parameters';
import type { TrainBatch } from './make-synthetic-batch';
import { shapeSize, type ParamSpec } from './parameter-specs';
import { tensorNames } from './tensor-names';
import type { StepMeasurement, StepResult, TrainStepState } from './step-types';

type Feeds = Record<string, ort.Tensor>;

/** Throws unless `arr` is a `dtype` array with the size of `p`. */
export function checkTensor(label: string, arr: FloatArray | undefined, p: ParamSpec, dtype: FloatDType): void {
  if (arr === undefined) throw new TrainInputError(`${label} is missing`);
  const want = dtype === 'float64' ? Float64Array : Float32Array;
  if (!(arr instanceof want))
    throw new TrainInputError(`${label} must be a ${want.name} (the step's dtype is ${dtype})`);
  if (arr.length !== shapeSize(p.shape)) {
    throw new TrainInputError(
      `${label} has ${arr.length} values; shape [${p.shape.join(', ')}] needs ${shapeSize(p.shape)}`,
    );
  }
}

export function zerosOf(dtype: FloatDType, n: number): FloatArray {
  return dtype === 'float64' ? new Float64Array(n) : new Float32Array(n);
}

export function checkGpuMemLimit(gpuMemLimitBytes: number | undefined): void {
  if (gpuMemLimitBytes !== undefined && !(Number.isInteger(gpuMemLimitBytes) && gpuMemLimitBytes > 0)) {
    throw new TrainInputError(`gpuMemLimitBytes must be a positive integer (got ${gpuMemLimitBytes})`);
  }
}

export function checkLr(lr: number): void {
  if (!Number.isFinite(lr) || lr < 0) throw new TrainInputError(`lr must be a finite number ≥ 0 (got ${lr})`);
}

/** The starting parameters: copies of `given` (checked), or a fresh initialisation from `seed`. */
export function startParameters(o: {
  given: ReadonlyMap<string, FloatArray> | undefined;
  params: readonly ParamSpec[];
  spec: GptSpec;
  dtype: FloatDType;
  seed: number | undefined;
}): Map<string, FloatArray> {
  if (!o.given) return initParameters({ spec: o.spec, seed: o.seed ?? 0, dtype: o.dtype });
  const parameters = new Map<string, FloatArray>();
  for (const p of o.params) {
    const src = o.given.get(p.name);
    checkTensor(`parameters ${p.name}`, src, p, o.dtype);
    parameters.set(p.name, src!.slice());
  }
  return parameters;
}

/** Fills `state` with the parameters and zero AdamW moments. */
export function fillInitialState(
  state: Map<string, FloatArray>,
  params: readonly ParamSpec[],
  parameters: ReadonlyMap<string, FloatArray>,
  dtype: FloatDType,
): void {
  for (const p of params) {
    const n = shapeSize(p.shape);
    state.set(p.name, parameters.get(p.name)!);
    state.set(tensorNames.adamM(p.name), zerosOf(dtype, n));
    state.set(tensorNames.adamV(p.name), zerosOf(dtype, n));
  }
}

/** Copies of the parameters, keyed by name, in `params` order. */
export function copyParameters(
  params: readonly ParamSpec[],
  state: ReadonlyMap<string, FloatArray>,
): Map<string, FloatArray> {
  const out = new Map<string, FloatArray>();
  for (const p of params) out.set(p.name, state.get(p.name)!.slice());
  return out;
}

/** A copy of everything a bit-exact resume needs. */
export function copyState(
  params: readonly ParamSpec[],
  state: ReadonlyMap<string, FloatArray>,
  step: number,
): TrainStepState {
  const m = new Map<string, FloatArray>();
  const v = new Map<string, FloatArray>();
  for (const p of params) {
    m.set(p.name, state.get(tensorNames.adamM(p.name))!.slice());
    v.set(p.name, state.get(tensorNames.adamV(p.name))!.slice());
  }
  return { step, parameters: copyParameters(params, state), m, v };
}

/**
 * Validates `update` (every tensor of a given map, right size and dtype) and only then writes it
 * into `state`. Returns the new step counter, or undefined when `update` has none.
 */
export function applyState(
  state: Map<string, FloatArray>,
  params: readonly ParamSpec[],
  dtype: FloatDType,
  update: Partial<TrainStepState>,
): number | undefined {
  if (update.step !== undefined && (!Number.isInteger(update.step) || update.step < 0)) {
    throw new TrainInputError(`step must be a non-negative integer (got ${update.step})`);
  }
  const updates: [string, FloatArray][] = [];
  const take = (label: string, map: ReadonlyMap<string, FloatArray> | undefined, key: (p: string) => string): void => {
    if (!map) return;
    for (const p of params) {
      const src = map.get(p.name);
      checkTensor(`${label} ${p.name}`, src, p, dtype);
      updates.push([key(p.name), src!.slice()]);
    }
  };
  take('parameters', update.parameters, (p) => p);
  take('m', update.m, tensorNames.adamM);
  take('v', update.v, tensorNames.adamV);
  for (const [k, arr] of updates) state.set(k, arr);
  return update.step;
}

/** Checks `batch` against `spec` and returns its `input_ids` / `labels` feeds. */
export function batchFeeds(spec: GptSpec, batch: TrainBatch): Feeds {
  const { batchSize } = batch;
  const { seqLen: T, vocabSize: V } = spec;
  if (!Number.isInteger(batchSize) || batchSize < 1)
    throw new TrainInputError(`batchSize must be a positive integer (got ${batchSize})`);
  for (const [field, arr] of [
    ['inputIds', batch.inputIds],
    ['labels', batch.labels],
  ] as const) {
    if (!(arr instanceof BigInt64Array)) throw new TrainInputError(`batch.${field} must be a BigInt64Array`);
    if (arr.length !== batchSize * T) {
      throw new TrainInputError(
        `batch.${field} has ${arr.length} ids; batchSize × seqLen = ${batchSize} × ${T} = ${batchSize * T}`,
      );
    }
    for (let i = 0; i < arr.length; i++) {
      const id = arr[i]!;
      if (id < 0n || id >= BigInt(V))
        throw new TrainInputError(`batch.${field}[${i}] = ${id} is outside the vocabulary [0, ${V})`);
    }
  }
  return {
    [tensorNames.inputIds]: new ort.Tensor('int64', batch.inputIds, [batchSize, T]),
    [tensorNames.labels]: new ort.Tensor('int64', batch.labels, [batchSize, T]),
  };
}

/** The learning-rate and step-counter feeds of the AdamW update. */
export function optimizerFeeds(dtype: FloatDType, lr: number, step: number): Feeds {
  return {
    [tensorNames.lr]: new ort.Tensor(dtype, dtype === 'float64' ? Float64Array.of(lr) : Float32Array.of(lr), []),
    [tensorNames.step]: new ort.Tensor('int64', BigInt64Array.of(BigInt(step)), []),
  };
}

/** Adds a feed per parameter (its current value in `state`) to `feeds`. */
export function addParameterFeeds(
  feeds: Feeds,
  params: readonly ParamSpec[],
  state: ReadonlyMap<string, FloatArray>,
  dtype: FloatDType,
): Feeds {
  for (const p of params) feeds[p.name] = new ort.Tensor(dtype, state.get(p.name)!, p.shape);
  return feeds;
}

/** Hands the step's timings (the result without `lr`) to `measure` and returns `result`. */
export function reportStep(result: StepResult, measure: ((m: StepMeasurement) => void) | undefined): StepResult {
  measure?.({
    step: result.step,
    batchSize: result.batchSize,
    tokens: result.tokens,
    loss: result.loss,
    gradNorm: result.gradNorm,
    runMs: result.runMs,
    totalMs: result.totalMs,
  });
  return result;
}
