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
//     error under that variance;
//   - and the later runs on one line: with three runs, one slow middle run bends the line the same
//     way, and its later slope is too SMALL by the delay / K (a row read faster than it is, a false
//     winner). So a bend of three runs is only `pending` (the 3-point slope stands; tuneExec then times
//     the row at 1 + 3K), and it is cancelled only where the later runs' first segment agrees with the
//     slope of the rest within the same t × standard error: a warm-up shifts every later run alike, a
//     disturbed run does not. A row whose later runs are off one line is timed by its other runs (the
//     first later one, the one a stall most likely hit, left out).
// A row whose warm-up is cancelled has its step time and noise from its later runs; the pooled noise
// of every row then holds the residuals of its later runs only (none with three runs), not its bend.
import { type Clock, slope, type TimedRun, tQuantile } from './_line-fit';

/**
 * The later runs are on one line when their kink is under this fraction of their slope, whatever the noise: a stall
 * that makes a false winner moves a slope by far more (700 ms over 8 steps of 20 ms: over 4×).
 */
export const KINK_FRACTION = 0.1;

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
  /** The rows whose three runs bend beyond the noise: a fourth run (1 + 3K) tells a warm-up from a disturbed run. */
  pending: Set<R>;
  /** Pooled residual variance, a cancelled row's bend left out (null: no degree of freedom). */
  variance: number | null;
  dof: number;
}

interface Fit {
  pts: Map<number, number>;
  full: ReturnType<typeof slope>;
  /** The later runs' line and the bend's variance factor (Var = σ² × bendVar), for rows with three runs or more. */
  later: (ReturnType<typeof slope> & { steps: number[]; bend: number; bendVar: number }) | null;
  /** With three later runs or more: their first segment's slope minus the rest's, and its variance factor. */
  kink: { diff: number; diffVar: number } | null;
  /** With four runs or more: the line through every run but the first later one (the run a stall most likely hit). */
  skip: ReturnType<typeof slope> | null;
}

function fitOf(runs: ReadonlyMap<number, TimedRun>, clock: Clock): Fit {
  const pts = new Map(
    [...runs].sort((a, b) => a[0] - b[0]).map(([n, r]) => [n, clock === 'wall' ? r.wallMs : r.spanMs!]),
  );
  const full = slope(pts);
  if (pts.size < 3) return { pts, full, later: null, kink: null, skip: null };
  const [[x0, y0], ...laterRuns] = [...pts] as [[number, number], ...[number, number][]];
  const { rest: l, diff: bend, diffVar: bendVar } = kinkOf([...pts]);
  const later = { ...l, steps: laterRuns.map(([x]) => x), bend, bendVar };
  const skip = laterRuns.length >= 3 ? slope(new Map([[x0, y0], ...laterRuns.slice(1)])) : null;
  return { pts, full, later, kink: laterRuns.length >= 3 ? kinkOf(laterRuns) : null, skip };
}

/**
 * The first segment's slope minus the least-squares line of the runs after its first (`rest`), and the variance
 * factor of that difference: diff = (y2 − y1) / dx − Σ (x − mx) y / sxx, its coefficients on the runs squared, summed.
 * Over every run it is a row's bend; over its later runs, their kink.
 */
function kinkOf(runs: [number, number][]): { rest: ReturnType<typeof slope>; diff: number; diffVar: number } {
  const [[x1, y1], [x2, y2]] = runs as [[number, number], [number, number]];
  const rest = slope(new Map(runs.slice(1)));
  const xs = runs.slice(1).map(([x]) => x);
  const mx = xs.reduce((a, x) => a + x, 0) / xs.length;
  const dx = x2 - x1;
  const coef = [-1 / dx, ...xs.map((x, i) => (i === 0 ? 1 / dx : 0) - (x - mx) / rest.sxx)];
  return { rest, diff: (y2 - y1) / dx - rest.stepMs, diffVar: coef.reduce((a, c) => a + c * c, 0) };
}

/**
 * Whether a row's bend is a warm-up: positive, beyond t × its noise under `others`, its later runs on one line and
 * rising (`pending`: three runs, no later line to check yet; `disturbed`: a bend whose later runs are not on a line).
 */
function warmUpOf(f: Fit, others: { rss: number; dof: number }): 'warm' | 'pending' | 'disturbed' | null {
  if (f.later === null || others.dof === 0 || !(f.later.bend > 0)) return null;
  const v = others.rss / others.dof;
  const t = tQuantile(others.dof);
  if (!(f.later.bend > t * Math.sqrt(v * f.later.bendVar))) return null;
  // A later slope at or under 0 is no warm-up, but a stall as well: the fourth run says which run to leave out.
  if (f.kink === null) return 'pending';
  // On one line within the noise, or within KINK_FRACTION of the later slope: the other rows' noise, from a few runs,
  // can read 10× too small, and a kink that small moves the cancelled step by no more than that fraction.
  const onALine =
    Math.abs(f.kink.diff) <= Math.max(t * Math.sqrt(v * f.kink.diffVar), KINK_FRACTION * Math.abs(f.later.stepMs));
  return onALine && f.later.stepMs > 0 ? 'warm' : 'disturbed';
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
  const pending = new Set<R>();
  const disturbed = new Set<R>();
  for (const [row, f] of fits) {
    if (warmUps !== undefined) {
      if (warmUps.has(row) && f.later !== null) warm.add(row);
      continue;
    }
    const own = f.pts.size >= 3 ? { rss: f.full.rss, dof: f.pts.size - 2 } : { rss: 0, dof: 0 };
    const w = warmUpOf(f, { rss: rss - own.rss, dof: dof - own.dof });
    if (w === 'warm') warm.add(row);
    else if (w === 'pending') pending.add(row);
    else if (w === 'disturbed') disturbed.add(row);
  }
  // The pool under the chosen lines: a cancelled row gives its later runs' residuals (one fewer dof).
  let pooledRss = 0;
  let pooledDof = 0;
  for (const [row, f] of fits) {
    if (f.pts.size < 3) continue;
    pooledRss += warm.has(row) ? f.later!.rss : disturbed.has(row) ? f.skip!.rss : f.full.rss;
    pooledDof += f.pts.size - (warm.has(row) || disturbed.has(row) ? 3 : 2);
  }
  const variance = pooledDof === 0 ? null : pooledRss / pooledDof;
  const rows = new Map<R, RowStep>();
  for (const [row, f] of fits) {
    // A bend whose later runs are off one line is a disturbed run, most likely the first later one (a warm-up would
    // shift every later run alike): the line leaves it out, as the 3-point line through 1, 1 + K and 1 + 2K did.
    const line = warm.has(row) ? f.later! : disturbed.has(row) ? f.skip! : f.full;
    rows.set(row, {
      stepMs: line.stepMs,
      seMs: variance === null ? null : Math.sqrt(variance / line.sxx),
      warmUp: warm.has(row) ? `warm-up cancelled: the slope of the runs of ${listed(f.later!.steps)} steps` : null,
    });
  }
  return { rows, warm, pending, variance, dof: pooledDof };
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
