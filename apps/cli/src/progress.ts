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

const TTY_REDRAW_MS = 80;

/** Visible length of a line with ANSI colour codes. */
function visibleLength(line: string): number {
  return [...line.replace(/\x1b\[[0-9;]*m/g, '')].length;
}

/** Cuts a line with ANSI codes to `width` visible characters (codes kept, colour reset at the cut). */
function cut(line: string, width: number): string {
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

/**
 * Fits fields joined by two spaces into `width` visible characters by dropping whole fields from
 * the end, so no value is ever cut in the middle (`loss 2.3` never becomes `loss 2.`). Only a
 * first field wider than the terminal is cut, at a word boundary.
 */
export function fitFields(fields: readonly string[], width: number): string {
  const kept = fields.filter((f) => f.length > 0);
  while (kept.length > 1 && visibleLength(kept.join('  ')) > width) kept.pop();
  const line = kept.join('  ');
  if (visibleLength(line) <= width) return line;
  const hard = cut(line, width + 1);
  const plain = hard.replace(/\x1b\[[0-9;]*m/g, '');
  const space = plain.lastIndexOf(' ', width);
  return cut(line, space > 0 ? space : width).replace(/ +(\x1b\[0m)?$/, '$1');
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
  // Over 150 lines: one renderer's state (position, rate, last line, TTY or not) closed over by the methods it returns.
  const stream = opts.stream ?? process.stderr;
  const env = opts.env ?? process.env;
  const dumb = env.TERM === 'dumb';
  const isTTY = opts.isTTY ?? (Boolean(stream.isTTY) && !dumb);
  const color = opts.color ?? (isTTY && !env.NO_COLOR && !dumb);
  const now = opts.now ?? Date.now;
  const unit = opts.unit ?? 'it';
  const total = opts.total;
  const startAt = opts.start ?? 0;
  const endAt = opts.end ?? total;
  const lineEveryMs = opts.lineEveryMs ?? (total !== undefined ? 60_000 : 10_000);
  const fraction = opts.lineEveryFraction ?? 0.1;
  const started = now();
  const delayMs = opts.delayMs ?? 1000;
  const bucketOf = (v: number): number =>
    total !== undefined && total > 0 ? Math.floor(v / (total * fraction) + 1e-9) : 0;
  let everDrawn = false;
  let current = startAt;
  let info = '';
  let lastDraw = -Infinity;
  let lastLine = started;
  let lastBucket = bucketOf(startAt);
  let drawn = false;
  let finished = false;
  let pending: ReturnType<typeof setTimeout> | null = null;
  const paint = (code: string, s: string): string => (color ? `\x1b[${code}m${s}\x1b[0m` : s);
  const pct = (v: number): number => Math.floor((Math.min(v, total!) / total!) * 100);

  const stats = (): string[] => {
    const elapsed = now() - started;
    const done = current - startAt;
    const rate = elapsed > 0 && done > 0 ? (done * 1000) / elapsed : 0;
    const parts: string[] = [total !== undefined ? `${current}/${total}` : `${current}`];
    if (rate > 0) parts.push(`${rate >= 10 ? rate.toFixed(0) : rate.toFixed(2)} ${unit}/s`);
    if (endAt !== undefined && rate > 0 && current < endAt)
      parts.push(`eta ${formatDuration(((endAt - current) / rate) * 1000)}`);
    else parts.push(formatDuration(elapsed));
    return parts;
  };

  const clear = (): void => {
    if (drawn) stream.write('\r\x1b[K');
    drawn = false;
  };

  const cancelPending = (): void => {
    if (pending !== null) clearTimeout(pending);
    pending = null;
  };

  let lastText = '';
  const line = (): void => {
    const p = total !== undefined && total > 0 ? ` (${pct(current)}%)` : '';
    const text =
      `${opts.label}: ${total !== undefined ? `${current}/${total}${p}` : current}` + `${info ? `  ${info}` : ''}`;
    if (text === lastText) return; // the same line twice in a row says nothing new
    lastText = text;
    stream.write(`${text}\n`);
  };

  // Non-TTY: a line now, restarting both cadences (the heartbeat and the fraction crossed).
  const lineAt = (t: number): void => {
    lastLine = t;
    lastBucket = Math.max(lastBucket, bucketOf(current));
    line();
  };

  const drawTTY = (): void => {
    cancelPending();
    lastDraw = now();
    const cols = stream.columns && stream.columns >= 20 ? stream.columns : 80;
    let head = paint('1', opts.label);
    if (total !== undefined && total > 0) {
      const width = Math.max(10, Math.min(30, cols - 60));
      const filled = Math.round((Math.min(current, total) / total) * width);
      head +=
        ` ${paint('32', '█'.repeat(filled))}${paint('2', '░'.repeat(width - filled))} ` +
        `${String(pct(current)).padStart(3)}%`;
    }
    const fields = [head, ...stats(), ...info.split(/ {2,}/)];
    stream.write(`\r\x1b[K${fitFields(fields, cols - 1)}`);
    drawn = true;
  };

  // Draws the latest state after `ms`, so the line never shows a stale status (e.g. the batch a
  // probe is trying now) while a long step runs without updates.
  const later = (ms: number): void => {
    if (pending !== null) return;
    pending = setTimeout(() => {
      pending = null;
      if (!finished && !opts.silent) {
        everDrawn = true;
        drawTTY();
      }
    }, ms);
    pending.unref?.();
  };

  const draw = (force: boolean): void => {
    if (opts.silent || finished) return;
    const t = now();
    if (t - started < delayMs) {
      if (isTTY) later(delayMs - (t - started));
      return;
    }
    everDrawn = true;
    if (isTTY) {
      if (force || t - lastDraw >= TTY_REDRAW_MS) {
        drawTTY();
        return;
      }
      later(TTY_REDRAW_MS);
      return;
    }
    if (force || bucketOf(current) > lastBucket || t - lastLine >= lineEveryMs) lineAt(t);
  };

  return {
    update(value: number, status?: string): void {
      current = value;
      if (status !== undefined) info = status;
      draw(false);
    },
    log(text: string): void {
      if (opts.silent) return;
      clear();
      stream.write(`${text}\n`);
      if (isTTY && !finished) draw(true);
    },
    mark(status?: string): void {
      if (status !== undefined) info = status;
      if (opts.silent || finished) return;
      everDrawn = true;
      if (isTTY) drawTTY();
      else lineAt(now());
    },
    done(status?: string): void {
      if (finished) return;
      cancelPending();
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
      stream.write(
        `${isTTY ? `${paint('32', '✓')} ` : ''}${opts.label}: ${amount} in ${elapsed}${info ? `  ${info}` : ''}\n`,
      );
    },
    fail(): void {
      if (finished) return;
      cancelPending();
      clear();
      finished = true;
    },
  };
}

/** Runs `fn` under `bar`: done with `info(result)` once it resolves; failed, the error passed on, when it throws. */
export async function withProgress<T>(bar: Progress, fn: () => Promise<T>, info: (result: T) => string): Promise<T> {
  try {
    const result = await fn();
    bar.done(info(result));
    return result;
  } catch (err) {
    bar.fail();
    throw err;
  }
}
