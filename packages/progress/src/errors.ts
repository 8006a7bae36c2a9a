// Every error of @soup/progress: a ProgressError with a stable code.

/** The codes a ProgressError carries. */
export type ProgressErrorCode = 'SOUP_PROGRESS_INVALID_OPTION';

/** The base of @soup/progress's errors: a stable `code`, the `cause` kept. */
export class ProgressError extends Error {
  override readonly name: string = 'ProgressError';
  readonly code: ProgressErrorCode;

  constructor(message: string, options: { code: ProgressErrorCode; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = options.code;
  }
}

/**
 * {@link createProgress} was given a position that is not a count (`total`, `start`, `end` negative or not finite) or a
 * `lineEveryFraction` outside (0, 1]: a bar drawn from it would show nonsense, so it is refused up front.
 */
export class InvalidProgressOptionError extends ProgressError {
  override readonly name: string = 'InvalidProgressOptionError';
  /** The option refused. */
  readonly field: string;

  constructor(message: string, options: { field: string; cause?: unknown }) {
    super(message, { code: 'SOUP_PROGRESS_INVALID_OPTION', cause: options.cause });
    this.field = options.field;
  }
}
