// The loss curve of a run, from trainer_state.json's log_history: a compact Unicode plot for a
// terminal, plain text under NO_COLOR / non-TTY / TERM=dumb, and an SVG file.

/** One `log_history` entry (Hugging Face Trainer format). */
export interface LossPoint {
  step: number;
  loss?: number;
  eval_loss?: number;
  learning_rate?: number;
}

/** Options of {@link renderLossPlot}. */
export interface RenderLossPlotOptions {
  /** `trainer_state.json`'s `log_history`. */
  history: readonly LossPoint[];
  /** Columns available. @default 80 */
  columns?: number;
  /** Plot rows. @default 8 */
  rows?: number;
  /** Unicode braille plot (TTY) or a plain-text table of a few points. @default true */
  unicode?: boolean;
  /** The horizon, for the x axis. @default the last step */
  horizon?: number;
}

const fmt = (v: number): string => (Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2));

function trainPoints(history: readonly LossPoint[]): { step: number; loss: number }[] {
  return history.filter((e) => typeof e.loss === 'number' && Number.isFinite(e.loss)).map((e) => ({ step: e.step, loss: e.loss! }));
}

function evalPoints(history: readonly LossPoint[]): { step: number; loss: number }[] {
  return history.filter((e) => typeof e.eval_loss === 'number' && Number.isFinite(e.eval_loss)).map((e) => ({ step: e.step, loss: e.eval_loss! }));
}

/**
 * The loss curve as text lines. Unicode: a braille plot (2×4 dots per character) with a y axis and
 * the first/last step under it; eval losses are marked `◆`. Plain: `loss` at about ten evenly spaced
 * steps, one line each, and the eval loss. Returns [] when the history has no loss.
 */
export function renderLossPlot(opts: RenderLossPlotOptions): string[] {
  const pts = trainPoints(opts.history);
  const evals = evalPoints(opts.history);
  if (pts.length === 0) return [];
  const first = pts[0]!;
  const last = pts[pts.length - 1]!;
  const min = Math.min(...pts.map((p) => p.loss), ...evals.map((p) => p.loss));
  const max = Math.max(...pts.map((p) => p.loss), ...evals.map((p) => p.loss));
  if (opts.unicode === false) {
    const lines = [`loss curve (${pts.length} points, steps ${first.step}..${last.step}): ${fmt(first.loss)} → ${fmt(last.loss)}, min ${fmt(min)}`];
    const picks = new Set<number>();
    const n = Math.min(10, pts.length);
    for (let i = 0; i < n; i++) picks.add(Math.round((i * (pts.length - 1)) / Math.max(1, n - 1)));
    for (const i of [...picks].sort((a, b) => a - b)) lines.push(`  step ${String(pts[i]!.step).padStart(String(last.step).length)}  loss ${pts[i]!.loss.toFixed(4)}`);
    for (const e of evals) lines.push(`  step ${String(e.step).padStart(String(last.step).length)}  eval_loss ${e.loss.toFixed(4)}`);
    return lines;
  }
  const rows = Math.max(2, opts.rows ?? 8);
  const label = Math.max(fmt(max).length, fmt(min).length);
  const width = Math.max(10, Math.min(72, (opts.columns ?? 80) - label - 4));
  const x0 = first.step;
  const x1 = Math.max(opts.horizon ?? last.step, last.step, x0 + 1);
  const span = max - min || 1;
  const dotsW = width * 2;
  const dotsH = rows * 4;
  const grid: number[][] = Array.from({ length: rows }, () => Array.from({ length: width }, () => 0));
  const evalCells = new Set<string>();
  const dotY = (loss: number): number => Math.round(((max - loss) / span) * (dotsH - 1));
  const dotX = (step: number): number => Math.round(((step - x0) / (x1 - x0)) * (dotsW - 1));
  // one dot per column of dots: the mean loss of the points that fall in it, joined vertically
  const cols = new Map<number, number[]>();
  for (const p of pts) {
    const x = dotX(p.step);
    cols.set(x, [...(cols.get(x) ?? []), p.loss]);
  }
  const BITS = [
    [0x01, 0x08],
    [0x02, 0x10],
    [0x04, 0x20],
    [0x40, 0x80],
  ] as const;
  const set = (x: number, y: number): void => {
    const cell = grid[Math.floor(y / 4)]!;
    cell[Math.floor(x / 2)]! |= BITS[y % 4]![x % 2]!;
  };
  // consecutive columns joined by a line, so the curve reads as one stroke
  const xs = [...cols.keys()].sort((a, b) => a - b);
  const ys = xs.map((x) => dotY(cols.get(x)!.reduce((a, b) => a + b, 0) / cols.get(x)!.length));
  let prevY = ys[0]!;
  for (let i = 0; i < xs.length; i++) {
    const xa = i === 0 ? xs[0]! : xs[i - 1]! + 1;
    const ya = i === 0 ? ys[0]! : ys[i - 1]!;
    for (let x = xa; x <= xs[i]!; x++) {
      const y = xs[i] === xa ? ys[i]! : Math.round(ya + ((ys[i]! - ya) * (x - xa + 1)) / (xs[i]! - xa + 1));
      for (let yy = Math.min(prevY, y); yy <= Math.max(prevY, y); yy++) set(x, yy);
      prevY = y;
    }
  }
  for (const e of evals) evalCells.add(`${Math.floor(dotY(e.loss) / 4)},${Math.floor(dotX(e.step) / 2)}`);
  const lines: string[] = [];
  for (let r = 0; r < rows; r++) {
    const axis = r === 0 ? fmt(max) : r === rows - 1 ? fmt(min) : '';
    let row = '';
    for (let c = 0; c < width; c++) row += evalCells.has(`${r},${c}`) ? '◆' : String.fromCharCode(0x2800 + grid[r]![c]!);
    lines.push(`${axis.padStart(label)} ┤${row}`);
  }
  const left = `step ${x0}`;
  const right = `${x1}`;
  lines.push(`${' '.repeat(label)} └${'─'.repeat(width)}`);
  lines.push(`${' '.repeat(label + 2)}${left}${' '.repeat(Math.max(1, width - left.length - right.length))}${right}`);
  lines.push(`${' '.repeat(label + 2)}loss ${fmt(first.loss)} → ${fmt(last.loss)}${evals.length ? `  ◆ eval_loss ${evals[evals.length - 1]!.loss.toFixed(4)}` : ''}`);
  return lines;
}

/** Options of {@link lossPlotSvg}. */
export interface LossPlotSvgOptions {
  history: readonly LossPoint[];
  /** Title drawn at the top. @default "training loss" */
  title?: string;
  /** @default 640 */
  width?: number;
  /** @default 320 */
  height?: number;
  /** The horizon, for the x axis. @default the last step */
  horizon?: number;
}

const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** The loss curve as a standalone SVG document (axes, ticks, training loss line, eval points). */
export function lossPlotSvg(opts: LossPlotSvgOptions): string {
  const W = opts.width ?? 640;
  const H = opts.height ?? 320;
  const pts = trainPoints(opts.history);
  const evals = evalPoints(opts.history);
  const m = { l: 56, r: 16, t: 32, b: 40 };
  const all = [...pts, ...evals].map((p) => p.loss);
  const x0 = pts[0]?.step ?? 0;
  const x1 = Math.max(opts.horizon ?? 0, ...pts.map((p) => p.step), ...evals.map((p) => p.step), x0 + 1);
  const lo = all.length ? Math.min(...all) : 0;
  const hi = all.length ? Math.max(...all) : 1;
  const pad = (hi - lo || 1) * 0.05;
  const y0 = lo - pad;
  const y1 = hi + pad;
  const X = (s: number): number => m.l + ((s - x0) / (x1 - x0)) * (W - m.l - m.r);
  const Y = (v: number): number => H - m.b - ((v - y0) / (y1 - y0)) * (H - m.t - m.b);
  const n = (v: number): string => v.toFixed(1);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="#ffffff"/>`,
    `<text x="${m.l}" y="20" font-size="14" fill="#111">${esc(opts.title ?? 'training loss')}</text>`,
    `<line x1="${m.l}" y1="${H - m.b}" x2="${W - m.r}" y2="${H - m.b}" stroke="#444"/>`,
    `<line x1="${m.l}" y1="${m.t}" x2="${m.l}" y2="${H - m.b}" stroke="#444"/>`,
  ];
  for (let i = 0; i <= 4; i++) {
    const v = y0 + ((y1 - y0) * i) / 4;
    out.push(`<line x1="${m.l - 4}" y1="${n(Y(v))}" x2="${W - m.r}" y2="${n(Y(v))}" stroke="#ddd"/>`);
    out.push(`<text x="${m.l - 6}" y="${n(Y(v) + 4)}" text-anchor="end" fill="#333">${fmt(v)}</text>`);
    const s = x0 + ((x1 - x0) * i) / 4;
    out.push(`<text x="${n(X(s))}" y="${H - m.b + 16}" text-anchor="middle" fill="#333">${Math.round(s)}</text>`);
  }
  out.push(`<text x="${(W + m.l) / 2}" y="${H - 6}" text-anchor="middle" fill="#333">step</text>`);
  if (pts.length) out.push(`<polyline fill="none" stroke="#1f6feb" stroke-width="2" points="${pts.map((p) => `${n(X(p.step))},${n(Y(p.loss))}`).join(' ')}"/>`);
  for (const e of evals) out.push(`<circle cx="${n(X(e.step))}" cy="${n(Y(e.loss))}" r="5" fill="#d1242f"><title>eval_loss ${e.loss.toFixed(4)}</title></circle>`);
  out.push(`<text x="${W - m.r}" y="20" text-anchor="end" fill="#1f6feb">— loss${evals.length ? '  <tspan fill="#d1242f">● eval_loss</tspan>' : ''}</text>`);
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
