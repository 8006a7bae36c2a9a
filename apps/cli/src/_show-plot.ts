// Shows a run's loss curve (soup train at the end, soup ckpt status) and writes --plot <file.svg>.
import { lossPlotStyle, renderLossPlot, writeLossPlotSvg, type LossPoint } from '@soup/loss-plot';
import { relative } from 'node:path';
import type { CommandContext } from './_context';

/** Options of {@link showLossPlot}. */
export interface ShowLossPlotOptions {
  history: readonly LossPoint[];
  /** `--plot <file.svg>`: also write the SVG there. */
  plotPath?: string;
  horizon?: number;
  title?: string;
}

/**
 * Prints the loss curve (Unicode on a colour TTY; plain text under NO_COLOR, TERM=dumb or a pipe)
 * and writes the SVG when asked. Returns the SVG path written, or null.
 */
export function showLossPlot(ctx: CommandContext, opts: ShowLossPlotOptions): string | null {
  const human = ctx.json ? ctx.stderr : ctx.stdout;
  const style = lossPlotStyle({ env: ctx.env, isTTY: human.isTTY, columns: human.columns });
  const horizon = opts.horizon ? { horizon: opts.horizon } : {};
  const lines = renderLossPlot({ history: opts.history, ...style, ...horizon });
  if (lines.length > 0) ctx.say(lines.join('\n'));
  if (opts.plotPath === undefined) return null;
  const path = writeLossPlotSvg({
    path: opts.plotPath,
    cwd: ctx.cwd,
    history: opts.history,
    ...horizon,
    ...(opts.title ? { title: opts.title } : {}),
  });
  ctx.say(`wrote the loss plot to ${relative(ctx.cwd, path) || path}`);
  return path;
}
