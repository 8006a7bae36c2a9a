// Every error class @soup/onnx-train throws. Each has a stable `code`; the cause is kept.

/** Base class: `code` is stable across releases (`SOUP_ONNX_TRAIN_*`). */
export class OnnxTrainError extends Error {
  override name = 'OnnxTrainError';
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** A `GptSpec` (or a build option) is invalid; the message names the field and the fix. */
export class GptSpecError extends OnnxTrainError {
  override name = 'GptSpecError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('SOUP_ONNX_TRAIN_BAD_SPEC', message, options);
  }
}

/** The requested execution provider is not available in this onnxruntime-node install. */
export class ExecutionProviderError extends OnnxTrainError {
  override name = 'ExecutionProviderError';
  readonly provider: string;
  constructor(provider: string, message: string, options?: { cause?: unknown }) {
    super('SOUP_ONNX_TRAIN_EP_UNAVAILABLE', message, options);
    this.provider = provider;
  }
}

/**
 * ONNX Runtime failed while creating the session or running a step. The message keeps
 * ORT's own text (e.g. `Failed to allocate memory for requested buffer`), so OOM
 * classifiers that match on it keep working.
 */
export class TrainStepError extends OnnxTrainError {
  override name = 'TrainStepError';
  /**
   * True when the failure came after the step had started to write its parameters or moments
   * (the segmented optimizer updates one block at a time): the state is not the one before the
   * step, so the step cannot simply be redone. False: the step left the state untouched.
   */
  readonly stateChanged: boolean;
  constructor(message: string, options?: { cause?: unknown; stateChanged?: boolean }) {
    super('SOUP_ONNX_TRAIN_STEP_FAILED', message, options?.cause !== undefined ? { cause: options.cause } : undefined);
    this.stateChanged = options?.stateChanged ?? false;
  }
}

/** A batch, an argument or a state tensor does not match what the step expects. */
export class TrainInputError extends OnnxTrainError {
  override name = 'TrainInputError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('SOUP_ONNX_TRAIN_BAD_INPUT', message, options);
  }
}

/** A safetensors file is malformed or does not hold what the reader was asked for. */
export class SafetensorsError extends OnnxTrainError {
  override name = 'SafetensorsError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('SOUP_SAFETENSORS_INVALID', message, options);
  }
}

/** A checkpoint folder is missing files, or belongs to a different run. */
export class CheckpointError extends OnnxTrainError {
  override name = 'CheckpointError';
  constructor(
    code: 'SOUP_ONNX_TRAIN_CHECKPOINT_INVALID' | 'SOUP_ONNX_TRAIN_CHECKPOINT_MISMATCH',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
  }
}

/** The training text is missing, empty or too short for the sequence length. */
export class DataError extends OnnxTrainError {
  override name = 'DataError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('SOUP_ONNX_TRAIN_BAD_DATA', message, options);
  }
}

/**
 * The budget tier could not measure peak memory: it reads `/proc/self/status` (Linux). The
 * message names the fix (a fixed tier).
 */
export class MemoryMeasurementError extends OnnxTrainError {
  override name = 'MemoryMeasurementError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('SOUP_ONNX_TRAIN_NO_MEMORY_MEASUREMENT', message, options);
  }
}
