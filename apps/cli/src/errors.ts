/** Stable error codes of @soup/cli's own errors (the packages' errors keep their own codes). */
export type CliErrorCode =
  | 'SOUP_USAGE'
  | 'SOUP_HUB_TOKEN_MISSING'
  | 'SOUP_TRAIN_FAILED'
  | 'SOUP_INTERRUPTED'
  | 'SOUP_RESUME_REFUSED';

/** Base class of every error of the CLI itself: a stable `code` (mapped to an exit code), the `cause` kept. */
export class CliError extends Error {
  override readonly name: string = 'CliError';
  readonly code: CliErrorCode;

  constructor(message: string, options: { code: CliErrorCode; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = options.code;
  }
}

/** A command line that cannot work: a missing argument, flags that conflict, a value out of range. */
export class UsageError extends CliError {
  override readonly name = 'UsageError';
  declare readonly code: 'SOUP_USAGE';
  constructor(message: string, opts: { cause?: unknown } = {}) {
    super(message, { code: 'SOUP_USAGE', cause: opts.cause });
  }
}

/** The Hub needs a token and none was found (HF_TOKEN, HF_TOKEN_PATH, $HF_HOME/token, ~/.cache/huggingface/token). */
export class TokenMissingError extends CliError {
  override readonly name = 'TokenMissingError';
  declare readonly code: 'SOUP_HUB_TOKEN_MISSING';
  constructor(message: string, opts: { cause?: unknown } = {}) {
    super(message, { code: 'SOUP_HUB_TOKEN_MISSING', cause: opts.cause });
  }
}

/** The training run produced a result that cannot be used (e.g. a non-finite loss). */
export class TrainRunError extends CliError {
  override readonly name = 'TrainRunError';
  declare readonly code: 'SOUP_TRAIN_FAILED';
  constructor(message: string, opts: { cause?: unknown } = {}) {
    super(message, { code: 'SOUP_TRAIN_FAILED', cause: opts.cause });
  }
}

/** The run was interrupted (SIGINT / SIGTERM) before it finished. */
export class InterruptedError extends CliError {
  override readonly name = 'InterruptedError';
  declare readonly code: 'SOUP_INTERRUPTED';
  /** The signal that interrupted it, when known. */
  readonly signal: NodeJS.Signals | undefined;
  constructor(message = 'interrupted', opts: { cause?: unknown; signal?: NodeJS.Signals } = {}) {
    super(message, { code: 'SOUP_INTERRUPTED', cause: opts.cause });
    this.signal = opts.signal;
  }
}

/**
 * Resume was refused: the store holds another run's checkpoints, or a corrupt one. The message says which fields
 * changed or what is broken.
 */
export class ResumeRefusedError extends CliError {
  override readonly name = 'ResumeRefusedError';
  declare readonly code: 'SOUP_RESUME_REFUSED';
  constructor(message: string, opts: { cause?: unknown } = {}) {
    super(message, { code: 'SOUP_RESUME_REFUSED', cause: opts.cause });
  }
}
