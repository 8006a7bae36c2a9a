// How a terminal gets the loss curve: braille on a colour terminal, plain text otherwise.

/** Options of {@link lossPlotStyle}. */
export interface LossPlotStyleOptions {
  /** Whether the stream the plot goes to is a terminal. @default false */
  isTTY?: boolean;
  /** The stream's width in columns, when it has one. @default 80 */
  columns?: number;
  /** The environment: `NO_COLOR` and `TERM=dumb` ask for plain text. @default {} */
  env?: Readonly<Record<string, string | undefined>>;
}

/** What {@link lossPlotStyle} answers: the `unicode` and `columns` options of `renderLossPlot`. */
export interface LossPlotStyle {
  unicode: boolean;
  columns: number;
}

/**
 * Unicode on a terminal unless `NO_COLOR` is set or `TERM` is `dumb` (a pipe, a log file or a plain terminal
 * gets plain text, which reads the same everywhere); the terminal's width when it is at least 20 columns,
 * else 80.
 */
export function lossPlotStyle(opts: LossPlotStyleOptions): LossPlotStyle {
  const env = opts.env ?? {};
  const unicode = Boolean(opts.isTTY) && !env.NO_COLOR && env.TERM !== 'dumb';
  const columns = opts.columns && opts.columns >= 20 ? opts.columns : 80;
  return { unicode, columns };
}
