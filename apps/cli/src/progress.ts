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
  /** Units of work in all; undefined shows a counter without a bar. */
  total?: number;
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
  /** Non-TTY: the longest gap between two lines while work advances. @default 10000 */
  lineEveryMs?: number;
  /** Non-TTY: also print a line each time this fraction of the total is crossed. @default 0.1 */
  lineEveryFraction?: number;
  /** Draw nothing until the work has run this long (quick work stays quiet). @default 1000 */
  delayMs?: number;
  /** Print a summary line on done() even when nothing was drawn. @default true */
  summary?: boolean;
  /** Clock, injectable for tests. @default Date.now */
  now?: () => number;
  /** Environment (for NO_COLOR). @default process.env */
  env?: NodeJS.ProcessEnv;
}

/** A progress bar (TTY) or a few progress lines (not a TTY). */
export interface Progress {
  /** Sets the amount done so far and an optional short status (e.g. "loss 2.31"). */
  update(current: number, info?: string): void;
  /** Prints a line without breaking the bar. */
  log(line: string): void;
  /** Finishes: a final line with the elapsed time. */
  done(info?: string): void;
  /** Finishes after a failure: clears the bar, prints nothing more. */
  fail(): void;
}

const TTY_REDRAW_MS = 80;

/** Cuts a line with ANSI codes to `width` visible characters (codes kept, colour reset at the cut). */
function fit(line: string, width: number): string {
  let visible = 0;
  let out = '';
  for (let i = 0; i < line.length; ) {
    const esc = /^\x1b\[[0-9;]*m/.exec(line.slice(i));
    if (esc) {
      out += esc[0];
      i += esc[0].length;
      continue;
    }
    if (visible >= width) return `${out}\x1b[0m`;
    const ch = String.fromCodePoint(line.codePointAt(i)!);
    out += ch;
    i += ch.length;
    visible += 1;
  }
  return out;
}

/** `12.3s`, `4m05s`, `1h02m`. */
export function formatDuration(ms: number): string {
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(Math.floor(s % 60)).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

/**
 * A tiny progress renderer: a redrawn bar with rate and ETA on a TTY, or quiet
 * line-oriented output (every 10 % or 10 s) when the stream is a pipe or a file.
 * Honours NO_COLOR (https://no-color.org).
 */
export function createProgress(opts: ProgressOptions): Progress {
  const stream = opts.stream ?? process.stderr;
  const isTTY = opts.isTTY ?? Boolean(stream.isTTY);
  const env = opts.env ?? process.env;
  const color = opts.color ?? (isTTY && !env.NO_COLOR);
  const now = opts.now ?? Date.now;
  const unit = opts.unit ?? 'it';
  const total = opts.total;
  const lineEveryMs = opts.lineEveryMs ?? 10_000;
  const fraction = opts.lineEveryFraction ?? 0.1;
  const started = now();
  const delayMs = opts.delayMs ?? 1000;
  let everDrawn = false;
  let current = 0;
  let info = '';
  let lastDraw = 0;
  let lastLine = started;
  let lastBucket = 0;
  let drawn = false;
  let finished = false;
  const paint = (code: string, s: string): string => (color ? `\x1b[${code}m${s}\x1b[0m` : s);

  const stats = (): string => {
    const elapsed = now() - started;
    const rate = elapsed > 0 ? (current * 1000) / elapsed : 0;
    const parts: string[] = [];
    if (total !== undefined) parts.push(`${current}/${total}`);
    else parts.push(`${current}`);
    if (rate > 0) parts.push(`${rate >= 10 ? rate.toFixed(0) : rate.toFixed(2)} ${unit}/s`);
    if (total !== undefined && rate > 0 && current < total) parts.push(`eta ${formatDuration(((total - current) / rate) * 1000)}`);
    else parts.push(formatDuration(elapsed));
    return parts.join('  ');
  };

  const clear = (): void => {
    if (drawn) stream.write('\r\x1b[K');
    drawn = false;
  };

  const draw = (force: boolean): void => {
    if (opts.silent || finished) return;
    const t = now();
    if (t - started < delayMs) return;
    everDrawn = true;
    if (isTTY) {
      if (!force && t - lastDraw < TTY_REDRAW_MS) return;
      lastDraw = t;
      const cols = stream.columns && stream.columns >= 20 ? stream.columns : 80;
      let bar = '';
      if (total !== undefined && total > 0) {
        const width = Math.max(10, Math.min(30, cols - 60));
        const filled = Math.round((Math.min(current, total) / total) * width);
        bar = ` ${paint('32', '█'.repeat(filled))}${paint('2', '░'.repeat(width - filled))} ${String(Math.floor((Math.min(current, total) / total) * 100)).padStart(3)}%`;
      }
      const line = fit(`${paint('1', opts.label)}${bar}  ${stats()}${info ? `  ${info}` : ''}`, cols - 1);
      stream.write(`\r\x1b[K${line}`);
      drawn = true;
      return;
    }
    const bucket = total !== undefined && total > 0 ? Math.floor(current / (total * fraction)) : 0;
    if (force || bucket > lastBucket || t - lastLine >= lineEveryMs) {
      lastBucket = bucket;
      lastLine = t;
      const pct = total !== undefined && total > 0 ? ` (${Math.floor((current / total) * 100)}%)` : '';
      stream.write(`${opts.label}: ${total !== undefined ? `${current}/${total}${pct}` : current}${info ? `  ${info}` : ''}\n`);
    }
  };

  return {
    update(value: number, status?: string): void {
      current = value;
      if (status !== undefined) info = status;
      draw(false);
    },
    log(line: string): void {
      if (opts.silent) return;
      clear();
      stream.write(`${line}\n`);
      if (isTTY && !finished) draw(true);
    },
    done(status?: string): void {
      if (finished) return;
      if (status !== undefined) info = status;
      if (opts.silent) {
        finished = true;
        return;
      }
      clear();
      finished = true;
      if (opts.summary === false && !everDrawn) return;
      const elapsed = formatDuration(now() - started);
      const units = current === 1 || unit === 'it' ? unit : `${unit}s`;
      const amount = total !== undefined ? `${current}/${total} ${units}` : `${current} ${units}`;
      stream.write(`${isTTY ? paint('32', '✓') + ' ' : ''}${opts.label}: ${amount} in ${elapsed}${info ? `  ${info}` : ''}\n`);
    },
    fail(): void {
      if (finished) return;
      clear();
      finished = true;
    },
  };
}
