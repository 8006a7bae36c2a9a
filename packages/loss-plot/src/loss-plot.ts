// The loss curve of a run, from trainer_state.json's log_history: a compact Unicode plot for a
// terminal, plain text for a pipe or a plain terminal, and an SVG document.

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

const fmt = (v: number): string =>
  Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2);
const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

function trainPoints(history: readonly LossPoint[]): { step: number; loss: number }[] {
  return history
    .filter((e) => typeof e.loss === 'number' && Number.isFinite(e.loss))
    .map((e) => ({ step: e.step, loss: e.loss! }));
}

function evalPoints(history: readonly LossPoint[]): { step: number; loss: number }[] {
  return history
    .filter((e) => typeof e.eval_loss === 'number' && Number.isFinite(e.eval_loss))
    .map((e) => ({ step: e.step, loss: e.eval_loss! }));
}

/** Nice axis ticks: steps of 1, 2 or 5 × 10^k, about `target` of them, covering [lo, hi]. */
export function niceTicks(
  lo: number,
  hi: number,
  target = 5,
): { ticks: number[]; lo: number; hi: number; step: number } {
  if (!(hi > lo)) {
    const pad = Math.abs(lo) > 0 ? Math.abs(lo) * 0.1 : 1;
    return niceTicks(lo - pad, hi + pad, target);
  }
  const raw = (hi - lo) / Math.max(1, target);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 5, 10].find((m) => m * mag >= raw) ?? 10) * mag;
  const first = Math.floor(lo / step + 1e-9) * step;
  const last = Math.ceil(hi / step - 1e-9) * step;
  const ticks: number[] = [];
  const digits = Math.max(0, -Math.floor(Math.log10(step)) + 1);
  for (let v = first; v <= last + step / 2; v += step) ticks.push(Number(v.toFixed(digits)));
  return { ticks, lo: first, hi: last, step };
}

/** A tick label with as many decimals as the tick step needs (0.5 → "0.5", 2 → "2"). */
function tickLabel(v: number, step: number): string {
  const decimals = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  return v.toFixed(decimals);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/**
 * Isolated spikes: points far above the running median of their neighbours (5 each side), by more than
 * a quarter of the curve's smoothed range. They are drawn clipped at the top of the plot, not allowed
 * to set the scale. Returns the indices of the outliers and the smoothed range.
 */
export function findOutliers(values: readonly number[]): { outliers: Set<number>; smoothLo: number; smoothHi: number } {
  const smooth = values.map((_, i) =>
    median(
      values.slice(Math.max(0, i - 5), i + 6).filter((__, j) => j + Math.max(0, i - 5) !== i || values.length === 1),
    ),
  );
  const smoothLo = Math.min(...smooth);
  const smoothHi = Math.max(...smooth);
  const spread = smoothHi - smoothLo || Math.abs(smoothHi) * 0.1 || 1;
  const outliers = new Set<number>();
  values.forEach((v, i) => {
    if (v > smoothHi + spread * 0.25 && v > smooth[i]! + spread * 0.25) outliers.add(i);
  });
  return { outliers, smoothLo, smoothHi };
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
  // The summary's min is the training loss's; the eval loss is shown on its own line.
  const trainMin = Math.min(...pts.map((p) => p.loss));
  if (opts.unicode === false) {
    const steps = first.step === last.step ? `step ${first.step}` : `steps ${first.step}..${last.step}`;
    const lines = [
      `loss curve (${plural(pts.length, 'point')}, ${steps}): ${fmt(first.loss)} → ${fmt(last.loss)}, min ` +
        `${fmt(trainMin)}`,
    ];
    const picks = new Set<number>();
    const n = Math.min(10, pts.length);
    for (let i = 0; i < n; i++) picks.add(Math.round((i * (pts.length - 1)) / Math.max(1, n - 1)));
    for (const i of [...picks].sort((a, b) => a - b))
      lines.push(`  step ${String(pts[i]!.step).padStart(String(last.step).length)}  loss ${pts[i]!.loss.toFixed(4)}`);
    for (const e of evals)
      lines.push(`  step ${String(e.step).padStart(String(last.step).length)}  eval_loss ${e.loss.toFixed(4)}`);
    return lines;
  }
  const rows = Math.max(2, opts.rows ?? 8);
  const x0 = first.step;
  const x1 = Math.max(opts.horizon ?? last.step, last.step, x0 + 1);
  // Every column of dots spans the lowest to the highest loss that falls in it, and the y range is the
  // range of those same columns (and the eval marks): a spike reaches the top row, under its label.
  const min = Math.min(...pts.map((p) => p.loss), ...evals.map((p) => p.loss));
  const max = Math.max(...pts.map((p) => p.loss), ...evals.map((p) => p.loss));
  const label = Math.max(fmt(max).length, fmt(min).length);
  const width = Math.max(10, Math.min(72, (opts.columns ?? 80) - label - 4));
  const span = max - min || 1;
  const dotsW = width * 2;
  const dotsH = rows * 4;
  const grid: number[][] = Array.from({ length: rows }, () => Array.from({ length: width }, () => 0));
  const evalCells = new Set<string>();
  const dotY = (loss: number): number => Math.round(((max - loss) / span) * (dotsH - 1));
  const dotX = (step: number): number => Math.round(((step - x0) / (x1 - x0)) * (dotsW - 1));
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
  // Each column: a vertical stroke from its lowest to its highest loss; consecutive columns joined by
  // a line from the previous column's last point to this column's first, so the curve reads as one stroke.
  const xs = [...cols.keys()].sort((a, b) => a - b);
  let prev: { x: number; y: number } | null = null;
  for (const x of xs) {
    const losses = cols.get(x)!;
    const yTop = dotY(Math.max(...losses));
    const yBottom = dotY(Math.min(...losses));
    const yFirst = dotY(losses[0]!);
    const yLast = dotY(losses[losses.length - 1]!);
    if (prev !== null) {
      let yPrev = prev.y;
      for (let xx = prev.x + 1; xx <= x; xx++) {
        const y = Math.round(prev.y + ((yFirst - prev.y) * (xx - prev.x)) / (x - prev.x));
        for (let yy = Math.min(yPrev, y); yy <= Math.max(yPrev, y); yy++) set(xx, yy);
        yPrev = y;
      }
    }
    for (let yy = yTop; yy <= yBottom; yy++) set(x, yy);
    prev = { x, y: yLast };
  }
  for (const e of evals) evalCells.add(`${Math.floor(dotY(e.loss) / 4)},${Math.floor(dotX(e.step) / 2)}`);
  const lines: string[] = [];
  for (let r = 0; r < rows; r++) {
    const axis = r === 0 ? fmt(max) : r === rows - 1 ? fmt(min) : '';
    let row = '';
    for (let c = 0; c < width; c++)
      row += evalCells.has(`${r},${c}`) ? '◆' : String.fromCharCode(0x2800 + grid[r]![c]!);
    lines.push(`${axis.padStart(label)} ┤${row}`);
  }
  const left = `step ${x0}`;
  const right = `${x1}`;
  lines.push(`${' '.repeat(label)} └${'─'.repeat(width)}`);
  lines.push(`${' '.repeat(label + 2)}${left}${' '.repeat(Math.max(1, width - left.length - right.length))}${right}`);
  lines.push(
    `${' '.repeat(label + 2)}loss ${fmt(first.loss)} → ${fmt(last.loss)}` +
      `${evals.length ? `  ◆ eval_loss ${evals[evals.length - 1]!.loss.toFixed(4)}` : ''}`,
  );
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

/**
 * The loss curve as a standalone SVG document: axes labelled `step` and `loss`, ticks at nice 1-2-5
 * values, the training loss line, eval points. An isolated spike (far above the running median of its
 * neighbours) does not set the scale: it is drawn clipped at the top edge, marked ▲ with its value,
 * and a note under the title says so.
 */
export function lossPlotSvg(opts: LossPlotSvgOptions): string {
  const W = opts.width ?? 640;
  const H = opts.height ?? 320;
  const pts = trainPoints(opts.history);
  const evals = evalPoints(opts.history);
  const m = { l: 64, r: 16, t: 40, b: 48 };
  const { outliers } = pts.length ? findOutliers(pts.map((p) => p.loss)) : { outliers: new Set<number>() };
  const kept = [...pts.filter((_, i) => !outliers.has(i)), ...evals].map((p) => p.loss);
  const x0 = pts[0]?.step ?? 0;
  const x1 = Math.max(opts.horizon ?? 0, ...pts.map((p) => p.step), ...evals.map((p) => p.step), x0 + 1);
  const lo = kept.length ? Math.min(...kept) : 0;
  const hi = kept.length ? Math.max(...kept) : 1;
  const yAxis = niceTicks(lo, hi, 5);
  const xAxis = niceTicks(x0, x1, 6);
  const y0 = yAxis.lo;
  const y1 = yAxis.hi;
  const X = (s: number): number => m.l + ((s - x0) / (x1 - x0)) * (W - m.l - m.r);
  const Y = (v: number): number => H - m.b - ((Math.min(v, y1) - y0) / (y1 - y0)) * (H - m.t - m.b);
  const n = (v: number): string => v.toFixed(1);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" ` +
      'font-family="sans-serif" font-size="12">',
    `<rect width="${W}" height="${H}" fill="#ffffff"/>`,
    `<text x="${m.l}" y="18" font-size="14" fill="#111">${esc(opts.title ?? 'training loss')}</text>`,
  ];
  for (const v of yAxis.ticks) {
    out.push(`<line x1="${m.l - 4}" y1="${n(Y(v))}" x2="${W - m.r}" y2="${n(Y(v))}" stroke="#ddd"/>`);
    out.push(
      `<text class="tick-y" x="${m.l - 6}" y="${n(Y(v) + 4)}" text-anchor="end" fill="#333">` +
        `${tickLabel(v, yAxis.step)}</text>`,
    );
  }
  for (const s of xAxis.ticks.filter((t) => t >= x0 && t <= x1)) {
    out.push(`<line x1="${n(X(s))}" y1="${H - m.b}" x2="${n(X(s))}" y2="${H - m.b + 4}" stroke="#444"/>`);
    out.push(
      `<text class="tick-x" x="${n(X(s))}" y="${H - m.b + 16}" text-anchor="middle" fill="#333">` +
        `${tickLabel(s, xAxis.step)}</text>`,
    );
  }
  out.push(`<line x1="${m.l}" y1="${H - m.b}" x2="${W - m.r}" y2="${H - m.b}" stroke="#444"/>`);
  out.push(`<line x1="${m.l}" y1="${m.t}" x2="${m.l}" y2="${H - m.b}" stroke="#444"/>`);
  out.push(
    `<text class="axis-label" x="${(W + m.l - m.r) / 2}" y="${H - 8}" text-anchor="middle" fill="#333">step</text>`,
  );
  out.push(
    `<text class="axis-label" transform="translate(16 ${(H + m.t - m.b) / 2}) rotate(-90)" text-anchor="middle" ` +
      `fill="#333">loss</text>`,
  );
  if (pts.length)
    out.push(
      `<polyline fill="none" stroke="#1f6feb" stroke-width="2" points="` +
        `${pts.map((p) => `${n(X(p.step))},${n(Y(p.loss))}`).join(' ')}"/>`,
    );
  const clipped = pts.filter((_, i) => outliers.has(i));
  for (const p of clipped) {
    const x = X(p.step);
    out.push(
      `<path class="clipped" d="M${n(x - 5)},${n(m.t + 7)} L${n(x + 5)},${n(m.t + 7)} L${n(x)},${n(m.t - 2)}` +
        ` Z" fill="#d97706"><title>loss ${p.loss.toFixed(4)} at step ${p.step} (above the scale)</title></path>`,
    );
    out.push(`<text x="${n(x + 8)}" y="${n(m.t + 8)}" fill="#d97706">${fmt(p.loss)}</text>`);
  }
  if (clipped.length) {
    const top = clipped.reduce((a, b) => (b.loss > a.loss ? b : a));
    out.push(
      `<text class="note" x="${m.l}" y="32" fill="#d97706">▲ ` +
        `${clipped.length === 1 ? '1 spike' : `${clipped.length} spikes`} above the scale, clipped (highest ` +
        `${fmt(top.loss)} at step ${top.step})</text>`,
    );
  }
  for (const e of evals)
    out.push(
      `<circle cx="${n(X(e.step))}" cy="${n(Y(e.loss))}" r="5" fill="#d1242f"><title>eval_loss ` +
        `${e.loss.toFixed(4)}</title></circle>`,
    );
  out.push(
    `<text x="${W - m.r}" y="18" text-anchor="end" fill="#1f6feb">— loss` +
      `${evals.length ? '  <tspan fill="#d1242f">● eval_loss</tspan>' : ''}</text>`,
  );
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
