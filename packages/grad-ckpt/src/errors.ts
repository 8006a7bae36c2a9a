/** Stable error codes of @soup/grad-ckpt. */
export type GradCkptErrorCode = 'SOUP_GRAD_CKPT_BAD_GRANULARITY' | 'SOUP_GRAD_CKPT_BAD_BUDGET_INPUT';

/** Base class of every error thrown by @soup/grad-ckpt. */
export class GradCkptError extends Error {
  override name = 'GradCkptError';
  readonly code: GradCkptErrorCode;
  constructor(code: GradCkptErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** `planCheckpoint` got a granularity other than `full`, `medium` or `selective`. */
export class GranularityError extends GradCkptError {
  override name = 'GranularityError';
  /** The value that was passed. */
  readonly granularity: unknown;
  constructor(granularity: unknown, message: string, options?: { cause?: unknown }) {
    super('SOUP_GRAD_CKPT_BAD_GRANULARITY', message, options);
    this.granularity = granularity;
  }
}

/** `planForBudget` / `predictPeakBytes` got an input they cannot plan with (the message names the field). */
export class BudgetPlanError extends GradCkptError {
  override name = 'BudgetPlanError';
  /** The offending field, e.g. `blocks[2].activationBytes`. */
  readonly field: string;
  constructor(field: string, message: string, options?: { cause?: unknown }) {
    super('SOUP_GRAD_CKPT_BAD_BUDGET_INPUT', message, options);
    this.field = field;
  }
}
