// A trainer whose first few steps are slow (a JIT, a data loader filling, cudnn autotune) adds that
// warm-up to every timing run longer than it, but only partly to the 1-step run: the line through
// the runs of 1, 1 + K and 1 + 2K steps bends, its first segment steeper, and its slope is too large
// by half the bend. The slope through the later runs (1 + K on) holds no warm-up shorter than K
// steps, at twice the noise, so it is taken only when the bend is beyond the noise:
//   - the bend is the first segment's slope minus the later runs' slope, and must be positive;
//   - its noise is judged by the residual variance pooled over the OTHER rows: a row's own residual
//     with three runs is its bend, so a pool holding it cannot tell a bend from noise (with two rows
//     no bend could ever pass). A bend every row shares stays, for the same reason, and is also what
//     a slow middle run on every row looks like;
//   - beyond noise: over Student's t (97.5 %, the other rows' degrees of freedom) times its standard
//     error under that variance.
// A row whose warm-up is cancelled has its step time and noise from its later runs; the pooled noise
// of every row then holds the residuals of its later runs only (none with three runs), not its bend.
import { type Clock, slope, type TimedRun, tQuantile } from './_line-fit';

/** `a`, `a and b`, `a, b and c`. */
const listed = (xs: number[]): string =>
  xs.length < 2 ? `${xs.join('')}` : `${xs.slice(0, -1).join(', ')} and ${xs.at(-1)}`;

/** A row's step time by one clock, its standard error, and whether a warm-up was cancelled (its note). */
export interface RowStep {
  stepMs: number;
  /** Standard error of `stepMs` under the pooled variance (null: no variance known yet). */
  seMs: number | null;
  /** `warm-up cancelled: …` when the step is the later runs' slope, else null. */
  warmUp: string | null;
}

/** Every row's step (NaN with one run) and the residual variance pooled over the rows. */
export interface RowSteps<R> {
  rows: Map<R, RowStep>;
  /** The rows whose warm-up was cancelled. */
  warm: Set<R>;
  /** Pooled residual variance, a cancelled row's bend left out (null: no degree of freedom). */
  variance: number | null;
  dof: number;
}

interface Fit {
  pts: Map<number, number>;
  full: ReturnType<typeof slope>;
  /** The later runs' line and the bend's variance factor (Var = σ² × bendVar), for rows with three runs or more. */
  later: (ReturnType<typeof slope> & { steps: number[]; bend: number; bendVar: number }) | null;
}

function fitOf(runs: ReadonlyMap<number, TimedRun>, clock: Clock): Fit {
  const pts = new Map(
    [...runs].sort((a, b) => a[0] - b[0]).map(([n, r]) => [n, clock === 'wall' ? r.wallMs : r.spanMs!]),
  );
  const full = slope(pts);
  if (pts.size < 3) return { pts, full, later: null };
  const [[x0, y0], ...laterRuns] = [...pts] as [[number, number], ...[number, number][]];
  const [x1, y1] = laterRuns[0]!;
  const laterPts = new Map(laterRuns);
  const l = slope(laterPts);
  const xs = [...laterPts.keys()];
  const mx = xs.reduce((a, x) => a + x, 0) / xs.length;
  const dx = x1 - x0;
  // bend = (y1 − y0) / dx − Σ (x − mx) y / sxx: its coefficients on the runs, squared, summed.
  const coef = [-1 / dx, ...xs.map((x, i) => (i === 0 ? 1 / dx : 0) - (x - mx) / l.sxx)];
  const bend = (y1 - y0) / dx - l.stepMs;
  return { pts, full, later: { ...l, steps: xs, bend, bendVar: coef.reduce((a, c) => a + c * c, 0) } };
}

/** Whether a row's bend is a warm-up: positive, a rising later slope, beyond t × its noise under `others`. */
function isWarmUp(f: Fit, others: { rss: number; dof: number }): boolean {
  if (f.later === null || others.dof === 0 || !(f.later.stepMs > 0) || !(f.later.bend > 0)) return false;
  const se = Math.sqrt((others.rss / others.dof) * f.later.bendVar);
  return f.later.bend > tQuantile(others.dof) * se;
}

/**
 * Each row's step time by `clock`: the slope through all its runs, or through its runs after the
 * first when the runs show a warm-up beyond the noise of the other rows (the module comment), or
 * for the rows of `warmUps` when given (another clock's verdict, to read both clocks by the same
 * lines); with the pooled residual variance its standard error is taken under.
 */
export function rowSteps<R>(
  runs: ReadonlyMap<R, ReadonlyMap<number, TimedRun>>,
  clock: Clock,
  warmUps?: ReadonlySet<R>,
): RowSteps<R> {
  const fits = new Map([...runs].map(([row, pts]) => [row, fitOf(pts, clock)]));
  let rss = 0;
  let dof = 0;
  for (const f of fits.values()) if (f.pts.size >= 3) [rss, dof] = [rss + f.full.rss, dof + f.pts.size - 2];
  const warm = new Set<R>();
  for (const [row, f] of fits) {
    if (warmUps !== undefined) {
      if (warmUps.has(row) && f.later !== null) warm.add(row);
      continue;
    }
    const own = f.pts.size >= 3 ? { rss: f.full.rss, dof: f.pts.size - 2 } : { rss: 0, dof: 0 };
    if (isWarmUp(f, { rss: rss - own.rss, dof: dof - own.dof })) warm.add(row);
  }
  // The pool under the chosen lines: a cancelled row gives its later runs' residuals (one fewer dof).
  let pooledRss = 0;
  let pooledDof = 0;
  for (const [row, f] of fits) {
    if (f.pts.size < 3) continue;
    pooledRss += warm.has(row) ? f.later!.rss : f.full.rss;
    pooledDof += f.pts.size - (warm.has(row) ? 3 : 2);
  }
  const variance = pooledDof === 0 ? null : pooledRss / pooledDof;
  const rows = new Map<R, RowStep>();
  for (const [row, f] of fits) {
    const line = warm.has(row) ? f.later! : f.full;
    rows.set(row, {
      stepMs: line.stepMs,
      seMs: variance === null ? null : Math.sqrt(variance / line.sxx),
      warmUp: warm.has(row) ? `warm-up cancelled: the slope of the runs of ${listed(f.later!.steps)} steps` : null,
    });
  }
  return { rows, warm, variance, dof: pooledDof };
}

/** A row's note with its warm-up clause (`warmUp`, null: none) in place of any earlier one. */
export function noteWithWarmUp(note: string | null, warmUp: string | null): string | null {
  const rest = (note ?? '')
    .split('; ')
    .filter((part) => part !== '' && !part.startsWith('warm-up cancelled: '))
    .join('; ');
  const parts = [rest, warmUp ?? ''].filter((p) => p !== '');
  return parts.length === 0 ? null : parts.join('; ');
}
