// The lines and progress of a batch-size search (@soup/plan's resolveBatch reports, the CLI draws).
import type { BatchEvent, PlanIo, TrialView } from '@soup/plan';
import type { CommandContext } from './_context';
import { formatBytes, formatBytesApart } from './format-bytes';
import { formatDuration, type Progress } from '@soup/progress';

/** A human line for one trial: size, verdict, peak vs budget, time. */
export function trialLine(t: TrialView, ctx: CommandContext): string {
  const verdict =
    t.result === 'fit'
      ? ctx.style.green('fits')
      : t.result === 'over-budget'
        ? ctx.style.yellow('over budget')
        : t.result === 'not-fit' && t.detail !== null && /headroom/.test(t.detail)
          ? ctx.style.yellow('over the headroom')
          : ctx.style.red(t.result === 'killed' ? 'OOM (killed)' : 'OOM');
  // Printed apart: at the edge a fitting and a failing size must not both read "peak 300 MiB / budget 300 MiB".
  const [peakText, budgetText] =
    t.peak_bytes !== null && t.budget_bytes !== null
      ? formatBytesApart(t.peak_bytes, t.budget_bytes)
      : [formatBytes(t.peak_bytes), formatBytes(t.budget_bytes)];
  const peak = t.peak_bytes !== null || t.budget_bytes !== null ? `  peak ${peakText} / budget ${budgetText}` : '';
  const notMeasured = t.measurement === 'not-measured' && t.detail ? `  ${ctx.style.yellow(t.detail)}` : '';
  const warning = t.warning ? `\n    ${ctx.style.yellow(`warning: ${t.warning}`)}` : '';
  return (
    `  batch ${String(t.batch_size).padStart(4)}  ${verdict}${peak}  ${ctx.style.dim(formatDuration(t.ms))}` +
    `${notMeasured}${warning}`
  );
}

/** Draws a search's events: a progress bar per search, a line per trial, the failing trial's output tail. */
export function batchLines(ctx: CommandContext, label = 'probe'): (e: BatchEvent) => void {
  let bar: Progress | null = null;
  // The progress shows what the trials so far prove (the largest size that fit, the smallest that did not), which
  // only narrows; a count of trials to go is a guess that grows whenever the search needs one more.
  let fit: number | null = null;
  let failed: number | null = null;
  const known = (): string =>
    fit === null && failed === null
      ? ''
      : `  (${fit === null ? 'none fit yet' : `${fit} fits`}${failed === null ? '' : `, ${failed} does not`})`;
  return (e) => {
    if (e.type === 'start') bar = ctx.progress({ label, unit: 'trial', summary: false });
    else if (e.type === 'trial-start')
      bar?.update(e.done, `trying batch ${e.batchSize}  trial ${e.done + 1}${known()}`);
    else if (e.type === 'trial') {
      const b = e.trial.batch_size;
      if (e.trial.result === 'fit') fit = Math.max(fit ?? b, b);
      else failed = Math.min(failed ?? b, b);
      bar?.log(trialLine(e.trial, ctx));
      bar?.update(e.done, `${e.done} done${known()}`);
    } else if (e.type === 'note') bar?.log(e.level === 'warn' ? `warning: ${e.line}` : e.line);
    else if (e.type === 'done') {
      if (e.batchSize !== null) bar?.done(`batch size ${e.batchSize}`);
      else bar?.fail();
    } else {
      bar?.fail();
      if (e.stderrTail !== null) {
        const { stream, lines } = e.stderrTail;
        // soup's frame around the trial's own lines, quoted as they are.
        ctx.stderr.write(
          `--- last ${lines.length} line${lines.length === 1 ? '' : 's'} of the trial's ${stream} ---\n`,
        );
        ctx.raw.stderr.write(`${lines.join('\n')}\n`);
        ctx.stderr.write('---\n');
      }
    }
  };
}

/** A search's environment, folder and stop from the command's context, its events drawn as lines. */
export function planIo(ctx: CommandContext, label?: string): PlanIo & { onEvent: (e: BatchEvent) => void } {
  return { env: ctx.env, cwd: ctx.cwd, signal: ctx.signal, onEvent: batchLines(ctx, label) };
}
