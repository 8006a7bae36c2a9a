// ONNX Runtime session options and creation for a training graph (shared by the fused step,
// the segmented step and probes).
import ort from 'onnxruntime-node';
import { ExecutionProviderError, TrainInputError, TrainStepError } from './errors';
import { raiseMallocThresholds } from './_malloc-threshold';
import type { ExecutionProviderName } from './step-types';

type Session = Awaited<ReturnType<typeof ort.InferenceSession.create>>;

/** The session option that keeps recompute copies apart: without it ORT merges them back. */
export const DISABLE_CSE = {
  optimization: { disable_specified_optimizers: 'CommonSubexpressionElimination' },
} as const;

const CUDA_HINT =
  'the CUDA execution provider is not installed in this onnxruntime-node: fetch it with its install script, ' +
  '`ONNXRUNTIME_NODE_INSTALL=cuda12 node node_modules/onnxruntime-node/script/install` (needs CUDA 12 and ' +
  'cuDNN 9), ' +
  "or use executionProvider: 'cpu'";

/** Session options for a training graph (shared by `TrainStep` and probes). */
export function trainingSessionOptions(o: {
  executionProvider?: ExecutionProviderName;
  deviceId?: number;
  intraOpNumThreads?: number;
  graphOptimizationLevel?: 'disabled' | 'basic' | 'extended' | 'all';
  profileFilePrefix?: string;
  enableCpuMemArena?: boolean;
  enableMemPattern?: boolean;
}): ort.InferenceSession.SessionOptions {
  const ep = o.executionProvider ?? 'cpu';
  if (ep !== 'cpu' && ep !== 'cuda')
    throw new TrainInputError(`executionProvider must be 'cpu' or 'cuda' (got ${JSON.stringify(ep)})`);
  const deviceId = o.deviceId ?? 0;
  if (!Number.isInteger(deviceId) || deviceId < 0)
    throw new TrainInputError(`deviceId must be a non-negative integer (got ${deviceId})`);
  const opts: ort.InferenceSession.SessionOptions = {
    executionProviders: ep === 'cuda' ? [{ name: 'cuda', deviceId }] : ['cpu'],
    graphOptimizationLevel: o.graphOptimizationLevel ?? 'all',
    logSeverityLevel: 3,
    extra: DISABLE_CSE,
  };
  if (o.intraOpNumThreads !== undefined) {
    if (!Number.isInteger(o.intraOpNumThreads) || o.intraOpNumThreads < 0) {
      throw new TrainInputError(`intraOpNumThreads must be a non-negative integer (got ${o.intraOpNumThreads})`);
    }
    opts.intraOpNumThreads = o.intraOpNumThreads;
  }
  if (o.enableCpuMemArena !== undefined) opts.enableCpuMemArena = o.enableCpuMemArena;
  opts.enableMemPattern = o.enableMemPattern ?? false;
  if (o.profileFilePrefix !== undefined) {
    opts.enableProfiling = true;
    opts.profileFilePrefix = o.profileFilePrefix;
  }
  return opts;
}

/** Creates an ORT session for a built model, turning a missing CUDA provider into `ExecutionProviderError`. */
export async function createTrainingSession(
  model: Uint8Array | string,
  options: Parameters<typeof trainingSessionOptions>[0],
  /**
   * More ORT session config entries, merged over `DISABLE_CSE` (e.g. `{session: {intra_op: {allow_spinning: '0'}}}`).
   */
  extra?: Record<string, unknown>,
): Promise<Session> {
  const base = trainingSessionOptions(options);
  // A step frees and allocates hundreds of MiB of output copies per step: keep them off the kernel.
  raiseMallocThresholds();
  // onnxruntime-node's telemetry writes files for every process that creates a session (mat-debug-<pid>.log and a
  // .ses file in the temp folder, ~/.cache/Microsoft/DeveloperTools/.onnxruntime): a run's probe children leave
  // thousands. Off unless the user set ORT_DISABLE_TELEMETRY (0 keeps onnxruntime's own behaviour).
  process.env.ORT_DISABLE_TELEMETRY ??= '1';
  const sessionOptions = extra ? { ...base, extra: { ...base.extra, ...extra } } : base;
  try {
    return await (typeof model === 'string'
      ? ort.InferenceSession.create(model, sessionOptions)
      : ort.InferenceSession.create(model, sessionOptions));
  } catch (err) {
    const message = (err as Error).message ?? String(err);
    if (
      (options.executionProvider ?? 'cpu') === 'cuda' &&
      /cuda|shared library|providers_shared|is unsupported/i.test(message)
    ) {
      throw new ExecutionProviderError(`${CUDA_HINT} (ORT said: ${message})`, { provider: 'cuda', cause: err });
    }
    throw new TrainStepError(`could not create the ONNX Runtime session: ${message}`, { cause: err });
  }
}
