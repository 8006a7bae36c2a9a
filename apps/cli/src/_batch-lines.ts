// The lines and progress of a batch-size search (@soup/plan's resolveBatch reports, the CLI draws).
import type { BatchEvent, PlanIo, TrialView } from '@soup/plan';
import type { CommandContext } from './_context';
import { formatBytes } from './format-bytes';
import { formatDuration, type Progress } from './progress';

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
  const peak =
    t.peak_bytes !== null || t.budget_bytes !== null
      ? `  peak ${formatBytes(t.peak_bytes)} / budget ${formatBytes(t.budget_bytes)}`
      : '';
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
  return (e) => {
    if (e.type === 'start') bar = ctx.progress({ label, unit: 'trial', summary: false });
    else if (e.type === 'trial-start')
      bar?.update(e.done, `trying batch ${e.batchSize}  trial ${e.done + 1} of ~${e.expected}`);
    else if (e.type === 'trial') {
      bar?.log(trialLine(e.trial, ctx));
      bar?.update(e.done, `${e.done} of ~${e.expected} done`);
    } else if (e.type === 'note') bar?.log(e.level === 'warn' ? `warning: ${e.line}` : e.line);
    else if (e.type === 'done') {
      if (e.batchSize !== null) bar?.done(`batch size ${e.batchSize}`);
      else bar?.fail();
    } else {
      bar?.fail();
      if (e.stderrTail !== null) {
        const { stream, lines } = e.stderrTail;
        ctx.stderr.write(
          `--- last ${lines.length} line${lines.length === 1 ? '' : 's'} of the trial's ${stream} ---\n` +
            `${lines.join('\n')}\n---\n`,
        );
      }
    }
  };
}

/** A search's environment, folder and stop from the command's context, its events drawn as lines. */
export function planIo(ctx: CommandContext, label?: string): PlanIo & { onEvent: (e: BatchEvent) => void } {
  return { env: ctx.env, cwd: ctx.cwd, signal: ctx.signal, onEvent: batchLines(ctx, label) };
}
