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
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly code: 'SOUP_CONFIG_INVALID' | 'SOUP_CONFIG_NOT_FOUND';
  /** Every problem found, in file order. */
  readonly issues: ConfigIssue[];
  /** The file the issues refer to. */
  readonly file: string;

  constructor(opts: { file: string; issues: ConfigIssue[]; code?: ConfigError['code']; cause?: unknown }) {
    super(opts.issues.map((i) => formatIssue(opts.file, i)).join('\n'), { cause: opts.cause });
    this.code = opts.code ?? 'SOUP_CONFIG_INVALID';
    this.issues = opts.issues;
    this.file = opts.file;
  }
}

/** A command line that cannot work: a missing argument, flags that conflict, a value out of range. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  readonly code = 'SOUP_USAGE';
  constructor(message: string, opts: { cause?: unknown } = {}) {
    super(message, { cause: opts.cause });
  }
}

/** The Hub needs a token and none was found (HF_TOKEN, HF_TOKEN_PATH, $HF_HOME/token, ~/.cache/huggingface/token). */
export class TokenMissingError extends Error {
  override readonly name = 'TokenMissingError';
  readonly code = 'SOUP_HUB_TOKEN_MISSING';
  constructor(message: string, opts: { cause?: unknown } = {}) {
    super(message, { cause: opts.cause });
  }
}

/** The training run produced a result that cannot be used (e.g. a non-finite loss). */
export class TrainRunError extends Error {
  override readonly name = 'TrainRunError';
  readonly code = 'SOUP_TRAIN_FAILED';
  constructor(message: string, opts: { cause?: unknown } = {}) {
    super(message, { cause: opts.cause });
  }
}

/** The run was interrupted (SIGINT / SIGTERM) before it finished. */
export class InterruptedError extends Error {
  override readonly name = 'InterruptedError';
  readonly code = 'SOUP_INTERRUPTED';
  /** The signal that interrupted it, when known. */
  readonly signal: NodeJS.Signals | undefined;
  constructor(message = 'interrupted', opts: { cause?: unknown; signal?: NodeJS.Signals } = {}) {
    super(message, { cause: opts.cause });
    this.signal = opts.signal;
  }
}

/** `file:line:col: path: message`, the one-line form of a config issue. */
export function formatIssue(file: string, issue: ConfigIssue): string {
  const where =
    issue.line !== undefined ? `${file}:${issue.line}${issue.col !== undefined ? `:${issue.col}` : ''}` : file;
  return `${where}: ${issue.path ? `${issue.path}: ` : ''}${issue.message}`;
}

/** Resume was refused: the store holds another run's checkpoints, or a corrupt one. The message says which fields changed or what is broken. */
export class ResumeRefusedError extends Error {
  override readonly name = 'ResumeRefusedError';
  readonly code = 'SOUP_RESUME_REFUSED';
  constructor(message: string, opts: { cause?: unknown } = {}) {
    super(message, { cause: opts.cause });
  }
}

/** `soup ckpt pull`: the checkpoint does not match its manifest (exit 8, as for a failed hash). */
export class PullIntegrityError extends Error {
  override readonly name = 'PullIntegrityError';
  readonly code = 'SOUP_PULL_INTEGRITY';
  constructor(message: string, opts: { cause?: unknown } = {}) {
    super(message, { cause: opts.cause });
  }
}
