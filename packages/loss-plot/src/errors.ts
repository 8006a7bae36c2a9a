// Every error of @soup/loss-plot: a LossPlotError with a stable code.

/** The codes a LossPlotError carries. */
export type LossPlotErrorCode = 'SOUP_LOSS_PLOT_PNG_UNSUPPORTED';

/** The base of @soup/loss-plot's errors: a stable `code`, the `cause` kept. */
export class LossPlotError extends Error {
  override readonly name: string = 'LossPlotError';
  readonly code: LossPlotErrorCode;

  constructor(message: string, options: { code: LossPlotErrorCode; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = options.code;
  }
}

/** {@link decodePng} was given bytes that are not a PNG it reads (16-bit, palette, interlaced, or not a PNG). */
export class PngUnsupportedError extends LossPlotError {
  override readonly name: string = 'PngUnsupportedError';

  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { code: 'SOUP_LOSS_PLOT_PNG_UNSUPPORTED', ...options });
  }
}
