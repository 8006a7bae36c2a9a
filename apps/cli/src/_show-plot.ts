// Shows a run's loss curve (soup train at the end, soup ckpt status) and writes --plot <file.svg>.
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import type { CommandContext } from './_context';
import { lossPlotSvg, renderLossPlot, type LossPoint } from './loss-plot';

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
  const unicode = Boolean(human.isTTY) && !ctx.env.NO_COLOR && ctx.env.TERM !== 'dumb';
  const lines = renderLossPlot({
    history: opts.history,
    unicode,
    columns: human.columns && human.columns >= 20 ? human.columns : 80,
    ...(opts.horizon ? { horizon: opts.horizon } : {}),
  });
  if (lines.length > 0) ctx.say(lines.join('\n'));
  if (opts.plotPath === undefined) return null;
  const path = resolve(ctx.cwd, opts.plotPath);
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(
    tmp,
    lossPlotSvg({
      history: opts.history,
      ...(opts.horizon ? { horizon: opts.horizon } : {}),
      ...(opts.title ? { title: opts.title } : {}),
    }),
  );
  renameSync(tmp, path);
  ctx.say(`wrote the loss plot to ${relative(ctx.cwd, path) || path}`);
  return path;
}
