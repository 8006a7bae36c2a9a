// Every error of @soup/config: a SoupConfigError with a stable code (the CLI maps both to exit 3).

/** The codes a SoupConfigError carries. */
export type SoupConfigErrorCode = 'SOUP_CONFIG_INVALID' | 'SOUP_CONFIG_NOT_FOUND';

/** The base of @soup/config's errors: a stable `code`, the `cause` kept. */
export class SoupConfigError extends Error {
  override readonly name: string = 'SoupConfigError';
  readonly code: SoupConfigErrorCode;

  constructor(message: string, options: { code: SoupConfigErrorCode; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = options.code;
  }
}

/** A problem found in soup.yaml: the field path, where it is, and what is allowed. */
export interface ConfigIssue {
  /** Dotted field path, e.g. `training.batch_size` (empty for the whole document). */
  path: string;
  /** 1-based line in the YAML file, when known. */
  line?: number;
  /** 1-based column in the YAML file, when known. */
  col?: number;
  /** What is wrong and what is allowed. */
  message: string;
}

/** soup.yaml is missing, unreadable, not YAML, or does not match the schema. */
export class ConfigError extends SoupConfigError {
  override readonly name = 'ConfigError';
  /** Every problem found, in file order. */
  readonly issues: ConfigIssue[];
  /** The file the issues refer to. */
  readonly file: string;

  constructor(opts: { file: string; issues: ConfigIssue[]; code?: SoupConfigErrorCode; cause?: unknown }) {
    super(opts.issues.map((i) => formatIssue(opts.file, i)).join('\n'), {
      code: opts.code ?? 'SOUP_CONFIG_INVALID',
      cause: opts.cause,
    });
    this.issues = opts.issues;
    this.file = opts.file;
  }
}

/** `file:line:col: path: message`, the one-line form of a config issue. */
export function formatIssue(file: string, issue: ConfigIssue): string {
  const where =
    issue.line !== undefined ? `${file}:${issue.line}${issue.col !== undefined ? `:${issue.col}` : ''}` : file;
  return `${where}: ${issue.path ? `${issue.path}: ` : ''}${issue.message}`;
}
