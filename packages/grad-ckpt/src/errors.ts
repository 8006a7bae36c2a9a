/** Stable error codes of @soup/grad-ckpt. */
export type GradCkptErrorCode = 'SOUP_GRAD_CKPT_BAD_GRANULARITY' | 'SOUP_GRAD_CKPT_BAD_BUDGET_INPUT';

/** Base class of every error thrown by @soup/grad-ckpt. */
export class GradCkptError extends Error {
  override readonly name: string = 'GradCkptError';
  readonly code: GradCkptErrorCode;
  constructor(message: string, options: { code: GradCkptErrorCode; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = options.code;
  }
}

/** `planCheckpoint` got a granularity other than `full`, `medium` or `selective`. */
export class GranularityError extends GradCkptError {
  override readonly name = 'GranularityError';
  declare readonly code: 'SOUP_GRAD_CKPT_BAD_GRANULARITY';
  /** The value that was passed. */
  readonly granularity: unknown;
  constructor(message: string, options: { granularity: unknown; cause?: unknown }) {
    super(message, { code: 'SOUP_GRAD_CKPT_BAD_GRANULARITY', cause: options.cause });
    this.granularity = options.granularity;
  }
}

/** `planForBudget` / `predictPeakBytes` got an input they cannot plan with (the message names the field). */
export class BudgetPlanError extends GradCkptError {
  override readonly name = 'BudgetPlanError';
  declare readonly code: 'SOUP_GRAD_CKPT_BAD_BUDGET_INPUT';
  /** The offending field, e.g. `blocks[2].activationBytes`. */
  readonly field: string;
  constructor(message: string, options: { field: string; cause?: unknown }) {
    super(message, { code: 'SOUP_GRAD_CKPT_BAD_BUDGET_INPUT', cause: options.cause });
    this.field = options.field;
  }
}
