// Every error of @soup/tune: a TuneError with a stable code.

/** The codes a TuneError carries. */
export type TuneErrorCode = 'SOUP_TUNE_NOTHING_TIMED' | 'SOUP_TUNE_NOTHING_CHOSEN';

/** The base of @soup/tune's errors: a stable `code`, the `cause` kept. */
export class TuneError extends Error {
  override readonly name: string = 'TuneError';
  readonly code: TuneErrorCode;

  constructor(message: string, options: { code: TuneErrorCode; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = options.code;
  }
}

/** No candidate of a trainer command's levers could be timed (none fits, or every timing run failed). */
export class NothingTimedError extends TuneError {
  override readonly name: string = 'NothingTimedError';

  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { code: 'SOUP_TUNE_NOTHING_TIMED', ...options });
  }
}

/** soup train's tuner found no candidate it could time. */
export class NothingChosenError extends TuneError {
  override readonly name: string = 'NothingChosenError';

  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { code: 'SOUP_TUNE_NOTHING_CHOSEN', ...options });
  }
}
