/** Stable error codes of @soup/grad-ckpt. */
export type GradCkptErrorCode =
  | 'SOUP_GRAD_CKPT_BAD_GRANULARITY'
  | 'SOUP_GRAD_CKPT_BAD_BUDGET_INPUT'
  | 'SOUP_GRAD_CKPT_BAD_TIER';

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

const KNOWN_TIERS = ['full', 'medium', 'selective', 'auto', 'budget'];

/** `resolveGranularity` (and what builds on it) got a tier that is none of the known ones. */
export class TierError extends GradCkptError {
  override readonly name = 'TierError';
  declare readonly code: 'SOUP_GRAD_CKPT_BAD_TIER';
  /** The value that was passed. */
  readonly tier: unknown;
  constructor(tier: unknown, options: { cause?: unknown } = {}) {
    const lower = typeof tier === 'string' ? tier.toLowerCase() : '';
    const hint = KNOWN_TIERS.includes(lower) ? ` (did you mean '${lower}'?)` : '';
    super(
      `unknown gradient-checkpointing tier ${JSON.stringify(tier)}${hint}: use false (off), true, 'full', 'medium', ` +
        `'selective', 'auto' or 'budget'`,
      { code: 'SOUP_GRAD_CKPT_BAD_TIER', cause: options.cause },
    );
    this.tier = tier;
  }
}
