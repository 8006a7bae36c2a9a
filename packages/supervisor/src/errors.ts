/** Every error of @soup/supervisor. Messages name the field or file and the fix. */

interface ErrorOptions {
  cause?: unknown;
}

/** An option cannot work (bad flag value, a layout soup cannot serve). `field` names it. */
export class SupervisorUsageError extends Error {
  override readonly name = 'SupervisorUsageError';
  readonly code = 'SOUP_SUPERVISOR_USAGE' as const;
  readonly field: string;

  constructor(field: string, message: string, options: ErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.field = field;
  }
}

/** The output folder is locked by another supervisor whose trainer (or itself) still lives. */
export class OutputLockedError extends Error {
  override readonly name = 'OutputLockedError';
  readonly code = 'SOUP_SUPERVISOR_LOCKED' as const;
  /** The lock file. */
  readonly lockPath: string;
  /** The live process that holds it. */
  readonly pid: number;

  constructor(message: string, p: { lockPath: string; pid: number }) {
    super(message);
    this.lockPath = p.lockPath;
    this.pid = p.pid;
  }
}
