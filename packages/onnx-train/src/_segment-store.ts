// The activation store of a segmented step: the offload option checked with @soup/offload, how
// each step opens its store, and the tensor conversions between ONNX Runtime and the store.
import { ActivationStore, checkOffloadConfig, type OffloadTarget, type OffloadTensor } from '@soup/offload';
import ort from 'onnxruntime-node';
import { TrainInputError, TrainStepError } from './errors';
import type { SegmentedTrainStepOptions } from './segmented-step-types';

const TARGETS: readonly string[] = ['keep', 'cpu', 'disk'];

export interface ResolvedStore {
  open: () => ActivationStore;
  target: OffloadTarget;
  saveDir: string | null;
  warnings: string[];
}

/** Checks `offload` with @soup/offload and returns how each step opens its store. */
export function resolveStore(options: SegmentedTrainStepOptions): ResolvedStore {
  if (options.openActivationStore !== undefined) {
    if (options.offload !== undefined)
      throw new TrainInputError('pass either offload or openActivationStore, not both');
    if (typeof options.openActivationStore !== 'function')
      throw new TrainInputError('openActivationStore must be a function returning an ActivationStore');
    const probe = options.openActivationStore();
    const info = { target: probe.target, saveDir: probe.saveDir };
    probe.close();
    return { open: options.openActivationStore, ...info, warnings: [] };
  }
  const offload = options.offload ?? { target: 'keep' as const };
  if (typeof offload !== 'object' || offload === null)
    throw new TrainInputError("offload must be an object {target: 'keep' | 'cpu' | 'disk', saveDir?}");
  const target = offload.target as unknown;
  if (typeof target !== 'string' || !TARGETS.includes(target)) {
    throw new TrainInputError(`offload.target must be 'keep', 'cpu' or 'disk' (got ${JSON.stringify(target)})`);
  }
  const cwd = offload.cwd ?? process.cwd();
  if (offload.fsync !== undefined && typeof offload.fsync !== 'boolean' && offload.fsync !== 'data') {
    throw new TrainInputError(`offload.fsync must be 'data', true or false (got ${JSON.stringify(offload.fsync)})`);
  }
  if (offload.anonymousFiles !== undefined && typeof offload.anonymousFiles !== 'boolean') {
    throw new TrainInputError(
      `offload.anonymousFiles must be true or false (got ${JSON.stringify(offload.anonymousFiles)})`,
    );
  }
  const report = checkOffloadConfig({
    target: target === 'keep' ? null : target,
    backend: 'onnxruntime',
    device: (options.executionProvider ?? 'cpu') === 'cuda' ? `cuda:${options.deviceId ?? 0}` : 'cpu',
    saveDir: offload.saveDir ?? null,
    cwd,
  });
  if (report.errors.length > 0) throw new TrainInputError(`offload: ${report.errors.join(' ')}`);
  const open = (): ActivationStore =>
    new ActivationStore({
      target: target as OffloadTarget,
      saveDir: target === 'disk' ? offload.saveDir! : null,
      cwd,
      ...(offload.fsync !== undefined ? { fsync: offload.fsync } : {}),
      anonymousFiles: offload.anonymousFiles ?? true,
    });
  // Open once now, so a save dir that cannot be created fails here rather than in the first step.
  let first: ActivationStore;
  try {
    first = open();
  } catch (err) {
    throw new TrainInputError(`offload: ${(err as Error).message}`, { cause: err });
  }
  const saveDir = first.saveDir;
  first.close();
  return { open, target: target as OffloadTarget, saveDir, warnings: report.warnings };
}

export function storeFailure(segment: string, op: 'pack' | 'unpack', err: unknown): TrainStepError {
  const message = (err as Error).message ?? String(err);
  return new TrainStepError(`segment ${segment}: the activation store could not ${op} a saved tensor: ${message}`, {
    cause: err,
  });
}

export function toOffload(t: ort.Tensor): OffloadTensor {
  return { dtype: t.type, dims: t.dims, data: t.data } as OffloadTensor;
}

export function toOrt(t: OffloadTensor): ort.Tensor {
  return new ort.Tensor(t.dtype as 'float32', t.data as Float32Array, t.dims);
}
