// Every error of @soup/plan: a SoupPlanError with a stable code.

/** The codes a SoupPlanError carries. */
export type SoupPlanErrorCode = 'SOUP_PLAN_BUDGET_UNMEASURED' | 'SOUP_PLAN_USAGE';

/** The base of @soup/plan's errors: a stable `code`, the `cause` kept. */
export class SoupPlanError extends Error {
  override readonly name: string = 'SoupPlanError';
  readonly code: SoupPlanErrorCode;

  constructor(message: string, options: { code: SoupPlanErrorCode; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = options.code;
  }
}

/** `gradient_checkpointing: budget` needs measured peaks, and a step reported none. */
export class BudgetUnmeasuredError extends SoupPlanError {
  override readonly name: string = 'BudgetUnmeasuredError';

  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { code: 'SOUP_PLAN_BUDGET_UNMEASURED', ...options });
  }
}

/**
 * Options that cannot work together, or a source that cannot be probed (soup exits 2): the message names the flags,
 * as the caller's user typed them.
 */
export class PlanUsageError extends SoupPlanError {
  override readonly name: string = 'PlanUsageError';

  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { code: 'SOUP_PLAN_USAGE', ...options });
  }
}
