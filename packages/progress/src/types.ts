/** A stream the renderer writes to (process.stderr by default). */
export interface ProgressStream {
  write(chunk: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

/** Options of {@link createProgress}. */
export interface ProgressOptions {
  /** What is being done, e.g. "train" or "push checkpoint-20". */
  label: string;
  /** Units of work in all (the horizon); undefined shows a counter without a bar. */
  total?: number;
  /**
   * Where this session starts on the way to `total` (a resumed run): counts and percentages stay
   * relative to `total`, rates and ETA count only the work done since `start`. @default 0
   */
  start?: number;
  /** Where this session stops (a segment boundary before the horizon): the ETA aims here. @default total */
  end?: number;
  /** Name of one unit in rates, e.g. "step". @default "it" */
  unit?: string;
  /** Where to draw. @default process.stderr */
  stream?: ProgressStream;
  /** Redraw in place (TTY) or print lines. @default stream.isTTY */
  isTTY?: boolean;
  /** Use ANSI colours. @default TTY and NO_COLOR unset/empty */
  color?: boolean;
  /** Print nothing at all (e.g. --quiet). @default false */
  silent?: boolean;
  /**
   * Non-TTY: the longest gap between two lines while work advances (a heartbeat for slow runs). @default 60000 with a
   * total (lines come every 10 %), else 10000
   */
  lineEveryMs?: number;
  /** Non-TTY: also print a line each time this fraction of the total is crossed. @default 0.1 */
  lineEveryFraction?: number;
  /** Draw nothing until the work has run this long (quick work stays quiet). @default 1000 */
  delayMs?: number;
  /** Print a summary line on done() even when nothing was drawn. @default true */
  summary?: boolean;
  /** Clock, injectable for tests. @default Date.now */
  now?: () => number;
  /** Environment (NO_COLOR, TERM=dumb: no ANSI codes, no redraws). @default process.env */
  env?: NodeJS.ProcessEnv;
}

/** A progress bar (TTY) or a few progress lines (not a TTY). */
export interface Progress {
  /** Sets the amount done so far and an optional short status (e.g. "loss 2.31"). */
  update(current: number, info?: string): void;
  /** Prints a line without breaking the bar. */
  log(line: string): void;
  /** Non-TTY: prints a progress line now (e.g. at a push), whatever the cadence. TTY: redraws. */
  mark(info?: string): void;
  /** Finishes: a final line with the elapsed time. */
  done(info?: string): void;
  /** Finishes after a failure: clears the bar, prints nothing more. */
  fail(): void;
}
