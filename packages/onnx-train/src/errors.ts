// Every error class @soup/onnx-train throws. Each has a stable `code`; the cause is kept.

/** Stable error codes of @soup/onnx-train. */
export type OnnxTrainErrorCode =
  | 'SOUP_ONNX_TRAIN_BAD_SPEC'
  | 'SOUP_ONNX_TRAIN_EP_UNAVAILABLE'
  | 'SOUP_ONNX_TRAIN_STEP_FAILED'
  | 'SOUP_ONNX_TRAIN_BAD_INPUT'
  | 'SOUP_SAFETENSORS_INVALID'
  | 'SOUP_ONNX_TRAIN_CHECKPOINT_INVALID'
  | 'SOUP_ONNX_TRAIN_CHECKPOINT_MISMATCH'
  | 'SOUP_ONNX_TRAIN_BAD_DATA'
  | 'SOUP_ONNX_TRAIN_NO_MEMORY_MEASUREMENT';

/** Base class: `code` is stable across releases (`SOUP_ONNX_TRAIN_*`, and `SOUP_SAFETENSORS_INVALID`). */
export class OnnxTrainError extends Error {
  override readonly name: string = 'OnnxTrainError';
  readonly code: OnnxTrainErrorCode;
  constructor(message: string, options: { code: OnnxTrainErrorCode; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = options.code;
  }
}

/** A `GptSpec` (or a build option) is invalid; the message names the field and the fix. */
export class GptSpecError extends OnnxTrainError {
  override readonly name = 'GptSpecError';
  declare readonly code: 'SOUP_ONNX_TRAIN_BAD_SPEC';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, { code: 'SOUP_ONNX_TRAIN_BAD_SPEC', cause: options?.cause });
  }
}

/** The requested execution provider is not available in this onnxruntime-node install. */
export class ExecutionProviderError extends OnnxTrainError {
  override readonly name = 'ExecutionProviderError';
  declare readonly code: 'SOUP_ONNX_TRAIN_EP_UNAVAILABLE';
  readonly provider: string;
  constructor(message: string, options: { provider: string; cause?: unknown }) {
    super(message, { code: 'SOUP_ONNX_TRAIN_EP_UNAVAILABLE', cause: options.cause });
    this.provider = options.provider;
  }
}

/**
 * ONNX Runtime failed while creating the session or running a step. The message keeps
 * ORT's own text (e.g. `Failed to allocate memory for requested buffer`), so OOM
 * classifiers that match on it keep working.
 */
export class TrainStepError extends OnnxTrainError {
  override readonly name = 'TrainStepError';
  declare readonly code: 'SOUP_ONNX_TRAIN_STEP_FAILED';
  /**
   * True when the failure came after the step had started to write its parameters or moments
   * (the segmented optimizer updates one block at a time): the state is not the one before the
   * step, so the step cannot simply be redone. False: the step left the state untouched.
   */
  readonly stateChanged: boolean;
  constructor(message: string, options?: { cause?: unknown; stateChanged?: boolean }) {
    super(message, { code: 'SOUP_ONNX_TRAIN_STEP_FAILED', cause: options?.cause });
    this.stateChanged = options?.stateChanged ?? false;
  }
}

/** A batch, an argument or a state tensor does not match what the step expects. */
export class TrainInputError extends OnnxTrainError {
  override readonly name = 'TrainInputError';
  declare readonly code: 'SOUP_ONNX_TRAIN_BAD_INPUT';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, { code: 'SOUP_ONNX_TRAIN_BAD_INPUT', cause: options?.cause });
  }
}

/** A safetensors file is malformed or does not hold what the reader was asked for. */
export class SafetensorsError extends OnnxTrainError {
  override readonly name = 'SafetensorsError';
  declare readonly code: 'SOUP_SAFETENSORS_INVALID';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, { code: 'SOUP_SAFETENSORS_INVALID', cause: options?.cause });
  }
}

/** A checkpoint folder is missing files, or belongs to a different run. */
export class CheckpointError extends OnnxTrainError {
  override readonly name = 'CheckpointError';
  declare readonly code: 'SOUP_ONNX_TRAIN_CHECKPOINT_INVALID' | 'SOUP_ONNX_TRAIN_CHECKPOINT_MISMATCH';
  constructor(
    message: string,
    options: { code: 'SOUP_ONNX_TRAIN_CHECKPOINT_INVALID' | 'SOUP_ONNX_TRAIN_CHECKPOINT_MISMATCH'; cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The training text is missing, empty or too short for the sequence length. */
export class DataError extends OnnxTrainError {
  override readonly name = 'DataError';
  declare readonly code: 'SOUP_ONNX_TRAIN_BAD_DATA';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, { code: 'SOUP_ONNX_TRAIN_BAD_DATA', cause: options?.cause });
  }
}

/**
 * The budget tier could not measure peak memory: it reads `/proc/self/status` (Linux). The
 * message names the fix (a fixed tier).
 */
export class MemoryMeasurementError extends OnnxTrainError {
  override readonly name = 'MemoryMeasurementError';
  declare readonly code: 'SOUP_ONNX_TRAIN_NO_MEMORY_MEASUREMENT';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, { code: 'SOUP_ONNX_TRAIN_NO_MEMORY_MEASUREMENT', cause: options?.cause });
  }
}
