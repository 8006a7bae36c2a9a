/** Every error of @soup/supervisor. Messages name the field or file and the fix. */

interface ErrorOptions {
  cause?: unknown;
}

/** Stable error codes of @soup/supervisor. */
export type SupervisorErrorCode =
  | 'SOUP_SUPERVISOR_USAGE'
  | 'SOUP_SUPERVISOR_LOCKED'
  | 'SOUP_SUPERVISOR_RESUME_REFUSED'
  | 'SOUP_SUPERVISOR_MICRO_AGREEMENT';

/** Base class of every error @soup/supervisor throws: a stable `code`, the `cause` kept. */
export class SupervisorError extends Error {
  override readonly name: string = 'SupervisorError';
  readonly code: SupervisorErrorCode;

  constructor(message: string, options: { code: SupervisorErrorCode; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = options.code;
  }
}

/** An option cannot work (bad flag value, a layout soup cannot serve). `field` names it. */
export class SupervisorUsageError extends SupervisorError {
  override readonly name = 'SupervisorUsageError';
  declare readonly code: 'SOUP_SUPERVISOR_USAGE';
  readonly field: string;

  constructor(message: string, options: { field: string; cause?: unknown }) {
    super(message, { code: 'SOUP_SUPERVISOR_USAGE', cause: options.cause });
    this.field = options.field;
  }
}

/** The output folder is locked by another supervisor whose trainer (or itself) still lives. */
export class OutputLockedError extends SupervisorError {
  override readonly name = 'OutputLockedError';
  declare readonly code: 'SOUP_SUPERVISOR_LOCKED';
  /** The lock file. */
  readonly lockPath: string;
  /** The live process that holds it. */
  readonly pid: number;

  constructor(message: string, p: { lockPath: string; pid: number; cause?: unknown }) {
    super(message, { code: 'SOUP_SUPERVISOR_LOCKED', cause: p.cause });
    this.lockPath = p.lockPath;
    this.pid = p.pid;
  }
}

/** A stored run record belongs to another command: resuming would continue a different run. */
export class StaleRecordError extends SupervisorError {
  override readonly name = 'StaleRecordError';
  declare readonly code: 'SOUP_SUPERVISOR_RESUME_REFUSED';

  constructor(message: string, options: ErrorOptions = {}) {
    super(message, { code: 'SOUP_SUPERVISOR_RESUME_REFUSED', cause: options.cause });
  }
}

/**
 * The nodes could not agree on one micro-batch: a node's answer is missing after the timeout (`missingRanks`), or
 * the smallest answer does not split G over the ranks (the message names the nearest workable G and m).
 */
export class MicroAgreementError extends SupervisorError {
  override readonly name = 'MicroAgreementError';
  declare readonly code: 'SOUP_SUPERVISOR_MICRO_AGREEMENT';
  /** Node ranks whose answer never came (empty when every node answered). */
  readonly missingRanks: number[];

  constructor(message: string, p: { missingRanks?: number[]; cause?: unknown } = {}) {
    super(message, { code: 'SOUP_SUPERVISOR_MICRO_AGREEMENT', cause: p.cause });
    this.missingRanks = p.missingRanks ?? [];
  }
}
