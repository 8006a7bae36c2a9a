import { createProgress, type Progress, type ProgressOptions, type ProgressStream } from '@soup/progress';

/** Where a command's output goes; injectable so tests can run `main` in-process. */
export interface CliIo {
  /** @default process.stdout */
  stdout?: ProgressStream;
  /** @default process.stderr */
  stderr?: ProgressStream;
  /** @default process.env */
  env?: NodeJS.ProcessEnv;
  /** @default process.cwd() */
  cwd?: string;
  /** Aborted on SIGINT/SIGTERM by the bin. */
  signal?: AbortSignal;
}

/** What every command receives: output helpers that respect --json, TTY and NO_COLOR. */
export interface CommandContext {
  json: boolean;
  env: NodeJS.ProcessEnv;
  cwd: string;
  signal: AbortSignal;
  /** soup's stdout: every line written to it starts with `soup: ` (see {@link soupLines}). */
  stdout: ProgressStream;
  /** soup's stderr: every line written to it starts with `soup: `. */
  stderr: ProgressStream;
  /** The streams as they are: the trainer's own output passes through them unchanged, and machine output. */
  raw: { stdout: ProgressStream; stderr: ProgressStream };
  /** A human line: stdout normally, stderr with --json (stdout then carries only JSON). */
  say(line: string): void;
  /** A warning line on stderr (`soup: warning: …`). */
  warn(line: string): void;
  /** The command's machine-readable result: printed as one JSON object with --json. */
  emit(result: unknown): void;
  /** A progress renderer on stderr. */
  progress(opts: Omit<ProgressOptions, 'stream' | 'env'>): Progress;
  /** Bold / dim / colour helpers that are no-ops when colour is off. */
  style: Style;
}

/** ANSI styling that turns itself off for NO_COLOR and non-TTY streams. */
export interface Style {
  bold(s: string): string;
  dim(s: string): string;
  green(s: string): string;
  red(s: string): string;
  yellow(s: string): string;
}

const PREFIX = 'soup: ';

/**
 * `stream` with `soup: ` before the first character of every line, so soup's lines stand apart from a trainer's on a
 * shared terminal: after a newline or a carriage return (a redraw's erase code stays first); `soup:` on a blank line.
 */
export function soupLines(stream: ProgressStream): ProgressStream {
  let lineStart = true;
  const write = (chunk: string): unknown => {
    let out = '';
    for (const part of chunk.split(/(\r|\n|\x1b\[K)/)) {
      if (part === '\n' || part === '\r') {
        if (lineStart && part === '\n') out += PREFIX.trimEnd();
        lineStart = true;
      } else if (part !== '' && !(lineStart && part === '\x1b[K')) {
        if (lineStart) out += PREFIX;
        lineStart = false;
      }
      out += part;
    }
    return stream.write(out);
  };
  return {
    write,
    get isTTY() {
      return stream.isTTY;
    },
    // The width a caller fits a line into leaves room for the prefix (read at each draw: a terminal resizes).
    get columns() {
      return stream.columns === undefined ? undefined : Math.max(1, stream.columns - PREFIX.length);
    },
  };
}

/** Builds the context of one command run. */
export function makeContext(io: CliIo, json: boolean): CommandContext {
  const rawOut = io.stdout ?? process.stdout;
  const rawErr = io.stderr ?? process.stderr;
  const stdout = soupLines(rawOut);
  // One writer per stream: a line begun on it is continued, not prefixed twice.
  const stderr = rawErr === rawOut ? stdout : soupLines(rawErr);
  const env = io.env ?? process.env;
  const human = json ? stderr : stdout;
  const plain = Boolean(env.NO_COLOR) || env.TERM === 'dumb';
  const color = Boolean(human.isTTY) && !plain;
  const wrap = (code: string) => (s: string) => (color ? `\x1b[${code}m${s}\x1b[0m` : s);
  const style: Style = { bold: wrap('1'), dim: wrap('2'), green: wrap('32'), red: wrap('31'), yellow: wrap('33') };
  const warnColor = Boolean(stderr.isTTY) && !plain;
  return {
    json,
    env,
    cwd: io.cwd ?? process.cwd(),
    signal: io.signal ?? new AbortController().signal,
    stdout,
    stderr,
    raw: { stdout: rawOut, stderr: rawErr },
    say: (line) => void human.write(`${line}\n`),
    warn: (line) => void stderr.write(`${warnColor ? '\x1b[33mwarning\x1b[0m' : 'warning'}: ${line}\n`),
    emit: (result) => {
      if (json) rawOut.write(`${JSON.stringify(result)}\n`);
    },
    progress: (opts) => createProgress({ ...opts, stream: stderr, env }),
    style,
  };
}
