import { fitFields } from './fit-fields';
import { formatDuration } from './format-duration';
import type { Progress, ProgressOptions } from './types';

const TTY_REDRAW_MS = 80;

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
