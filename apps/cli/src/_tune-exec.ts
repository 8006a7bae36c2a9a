// `soup probe --exec … --try NAME=v1,v2` and `soup run --try`: the flags (checked by @soup/tune's
// checkTries) turned into @soup/tune's tuneExec, and its table printed. The tuning itself (fit, timing
// runs, the clock, early stops, the close call, the tune cache) is @soup/tune's.
import { formatMicroBatch } from '@soup/batch-probe';
import { tuneExec as tune, type TuneEntry, type TuneEvent, type TuneExecOptions as TuneOptions } from '@soup/tune';
import type { CommandContext } from './_context';
import { renderTable } from './_table';
import { formatBytes } from './format-bytes';

/** A tuner's event as a line: a note dim, the rest plain. */
export const sayTuneEvent =
  (ctx: CommandContext) =>
  (e: TuneEvent): void =>
    ctx.say(e.type === 'note' ? ctx.style.dim(e.message) : e.message);

export interface TuneExecOptions extends Omit<TuneOptions, 'worldSize' | 'refresh' | 'noCache' | 'cache' | 'onEvent'> {
  ctx: CommandContext;
  worldSize: number;
  refresh: boolean;
  noCache: boolean;
  /** Print the entry as JSON with --json (soup probe); soup run prints only its own result. @default true */
  emitJson?: boolean;
}

/** Runs @soup/tune's tuneExec, its lines and table printed; returns the entry (also cached unless --no-cache). */
export async function tuneExec(o: TuneExecOptions): Promise<{ entry: TuneEntry; source: 'cache' | 'measured' }> {
  const { ctx, emitJson, ...options } = o;
  // A NothingTimedError (no configuration could be timed) exits 2 by its code (exit-codes.ts).
  const r = await tune({ ...options, cache: { env: ctx.env, cwd: ctx.cwd }, onEvent: sayTuneEvent(ctx) });
  printTable(ctx, r.entry);
  if (r.source === 'cache') {
    if (emitJson !== false) ctx.emit({ tune: r.entry, source: 'cache', key: r.key });
    return { entry: r.entry, source: 'cache' };
  }
  ctx.say(ctx.style.dim(`tuned in ${(r.tuneMs / 1000).toFixed(1)} s`));
  if (emitJson !== false)
    ctx.emit({ tune: r.entry, source: 'measured', key: r.key, cache_path: r.cachePath, tune_ms: r.tuneMs });
  return { entry: r.entry, source: 'measured' };
}

/** The table (candidate × m × a × peak × step × samples/s), the choice and why. */
export function printTable(ctx: CommandContext, e: TuneEntry): void {
  const N = e.worldSize;
  const rows: string[][] = [['', 'configuration', 'micro-batch', 'peak', 'step', 'samples/s', 'note']];
  e.rows.forEach((r, i) => {
    rows.push([
      i === e.chosen ? '→' : '',
      r.label,
      r.microBatchSize === null
        ? '—'
        : formatMicroBatch({ microBatchSize: r.microBatchSize, accumulation: r.accumulation!, worldSize: N }),
      r.peakBytes === null ? (r.microBatchSize === null ? '—' : 'unknown') : formatBytes(r.peakBytes),
      r.stepMs === null ? '—' : `${r.stepMs.toFixed(1)} ms${r.noiseMs !== null ? ` ±${r.noiseMs.toFixed(1)}` : ''}`,
      r.samplesPerSecond === null ? '—' : r.samplesPerSecond.toFixed(1),
      r.note ?? '',
    ]);
  });
  ctx.say(renderTable(rows, ctx.style.bold));
  if (e.timedBy) ctx.say(ctx.style.dim(`step times: ${e.timedBy}`));
  const c = e.rows[e.chosen]!;
  ctx.say(
    `choice: ${ctx.style.bold(c.label)}, micro-batch ` +
      `${formatMicroBatch({ microBatchSize: c.microBatchSize!, accumulation: c.accumulation!, worldSize: N })}: ` +
      `${e.reason}`,
  );
}
