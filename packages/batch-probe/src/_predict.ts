// The arithmetic of the predictive search: where a peak model fitted to the trials that reported
// a measured peak puts the largest size under the budget.

export interface PeakPoint {
  /** Batch size in search units (size / multipleOf). */
  units: number;
  peakBytes: number;
}

/** Points within this fraction of the budget of the fitted curve count as a good fit. */
export const FIT_TOLERANCE = 0.01;

export interface EdgeFit {
  /** The largest `units` the model keeps within the budget (not clamped to any bracket). */
  edge: number;
  /**
   * Whether every measured point lies within {@link FIT_TOLERANCE} of the budget of the model
   * (always true with three points or fewer: the model passes through them). False means noise
   * or a curve the model does not follow: a prediction from it is a guess, not an edge.
   */
  consistent: boolean;
}

/**
 * Fits the peak to the measured points and returns where it crosses the budget, or null when
 * the points cannot say (none, or a peak that does not rise between the farthest-apart sizes).
 * - One point: the proportional guess `budget * u / peak`. With `a >= 0` and that point within
 *   the budget, it never lies beyond the true edge of a linear peak.
 * - Two or more: the slope is taken between the two farthest-apart sizes (the span that
 *   measurement noise disturbs least): the line through them. With a third point, the parabola
 *   through both ends and the inner point whose peak is nearest the budget (exact for an
 *   attention term `q·b²`), when it bends up and rises where it crosses the budget within four
 *   spans of the measured sizes (a third point near the edge extrapolates about 2–3 spans); else the line.
 */
export function fitEdge(points: readonly PeakPoint[], budgetBytes: number): EdgeFit | null {
  const byUnits = new Map<number, number>();
  for (const p of points) byUnits.set(p.units, p.peakBytes);
  const pts = [...byUnits].map(([units, peakBytes]) => ({ units, peakBytes })).sort((x, y) => x.units - y.units);
  if (pts.length === 0 || !(budgetBytes > 0)) return null;
  if (pts.length === 1) {
    const p = pts[0]!;
    return p.peakBytes > 0 ? { edge: Math.floor((budgetBytes * p.units) / p.peakBytes), consistent: true } : null;
  }
  const lo = pts[0]!;
  const hi = pts.at(-1)!;
  const slope = (hi.peakBytes - lo.peakBytes) / (hi.units - lo.units);
  if (!(slope > 0)) return null;
  let model = (u: number) => lo.peakBytes + slope * (u - lo.units);
  let edge = lo.units + (budgetBytes - lo.peakBytes) / slope;
  const inner = pts
    .slice(1, -1)
    .sort((x, y) => Math.abs(x.peakBytes - budgetBytes) - Math.abs(y.peakBytes - budgetBytes))[0];
  if (inner) {
    // Newton form through lo, inner, hi: p(u) = lo + s1 (u - lo) + k (u - lo)(u - inner).
    const s1 = (inner.peakBytes - lo.peakBytes) / (inner.units - lo.units);
    const k = (slope - s1) / (hi.units - inner.units);
    // As a polynomial in t = u - lo.units: k t² + (s1 - k (inner - lo)) t + (lo - budget) = 0.
    const B = s1 - k * (inner.units - lo.units);
    const C = lo.peakBytes - budgetBytes;
    let t: number | null = null;
    if (Math.abs(k) < 1e-12 * Math.abs(B)) t = B > 0 ? -C / B : null;
    else {
      const disc = B * B - 4 * k * C;
      if (disc >= 0) {
        const r = Math.sqrt(disc);
        // The root where the parabola rises (its derivative 2kt + B > 0).
        const roots = [(-B + r) / (2 * k), (-B - r) / (2 * k)].filter((x) => 2 * k * x + B > 0);
        t = roots.length
          ? roots.reduce((best, x) => (Math.abs(x - (edge - lo.units)) < Math.abs(best - (edge - lo.units)) ? x : best))
          : null;
      }
    }
    const span = hi.units - lo.units;
    // Only a parabola that bends up (attention): one that bends down is noise or allocator
    // rounding, and its crossing can lie anywhere.
    if (k >= 0 && t !== null && Number.isFinite(t) && t >= -span && t <= 4 * span) {
      edge = lo.units + t;
      model = (u: number) => lo.peakBytes + s1 * (u - lo.units) + k * (u - lo.units) * (u - inner.units);
    }
  }
  if (!Number.isFinite(edge)) return null;
  const consistent = pts.every((p) => Math.abs(model(p.units) - p.peakBytes) <= FIT_TOLERANCE * budgetBytes);
  return { edge: Math.floor(edge + 1e-9), consistent };
}

/** {@link fitEdge}'s edge alone. */
export function predictEdge(points: readonly PeakPoint[], budgetBytes: number): number | null {
  return fitEdge(points, budgetBytes)?.edge ?? null;
}

/**
 * The smallest edge two measured sizes allow, for a peak `a + b·u + c·u²` with `b, c >= 0` (memory
 * that grows at least linearly and at most with an attention term): through the two
 * farthest-apart points, the model that bends up the most (`b = 0`) rises fastest beyond them, so
 * its crossing is the earliest the true edge can be. A trial there fits under a linear or a
 * quadratic peak and adds a measured point near the edge, from which the three-point fit lands
 * on the edge itself. Null with fewer than two sizes, or a peak that does not rise between them.
 */
export function cautiousEdge(points: readonly PeakPoint[], budgetBytes: number): number | null {
  const byUnits = new Map<number, number>();
  for (const p of points) byUnits.set(p.units, p.peakBytes);
  const pts = [...byUnits].map(([units, peakBytes]) => ({ units, peakBytes })).sort((x, y) => x.units - y.units);
  if (pts.length < 2 || !(budgetBytes > 0)) return null;
  const lo = pts[0]!;
  const hi = pts.at(-1)!;
  const slope = (hi.peakBytes - lo.peakBytes) / (hi.units - lo.units);
  if (!(slope > 0)) return null;
  // p(u) = a + c·u² through lo and hi: c = slope / (lo + hi), a = p(lo) − c·lo².
  const c = slope / (lo.units + hi.units);
  const a = lo.peakBytes - c * lo.units * lo.units;
  if (!(budgetBytes > a)) return null;
  const edge = Math.sqrt((budgetBytes - a) / c);
  return Number.isFinite(edge) ? Math.floor(edge + 1e-9) : null;
}

/**
 * The edge for peaks that carry measurement noise (sampled RSS jitters by a few MiB), from three
 * or more measured sizes. Three: {@link fitEdge} (the parabola through them when it bends up: an
 * attention term and noise look alike there, and only the parabola is exact for the first).
 * More: least squares over every point, so no single noisy point steers the slope: the parabola
 * `a + b·u + c·u²` where it bends up and explains the points much better than the line (a
 * residual under a quarter of the line's, in squares: a curve, not noise), else the line; either
 * moved to pass through the point nearest the budget, so the crossing extrapolates least. Null
 * with fewer than three sizes, or a peak that does not rise.
 */
export function noisyEdge(points: readonly PeakPoint[], budgetBytes: number): number | null {
  const pts = dedupe(points);
  if (pts.length < 3 || !(budgetBytes > 0)) return null;
  if (pts.length === 3) return fitEdge(pts, budgetBytes)?.edge ?? null;
  // Centred and scaled units keep the normal equations well conditioned.
  const mu = pts.reduce((s, p) => s + p.units, 0) / pts.length;
  const sc = Math.max(...pts.map((p) => Math.abs(p.units - mu))) || 1;
  const xs = pts.map((p) => (p.units - mu) / sc);
  const ys = pts.map((p) => p.peakBytes);
  const line = solveLeastSquares(xs, ys, 2);
  const parabola = solveLeastSquares(xs, ys, 3);
  const rss = (c: readonly number[]) =>
    xs.reduce((s, x, i) => s + (c.reduce((v, k, j) => v + k * x ** j, 0) - ys[i]!) ** 2, 0);
  const curve = parabola !== null && parabola[2]! > 0 && (line === null || rss(parabola) < 0.25 * rss(line));
  const coef = curve ? parabola : line;
  if (coef === null) return null;
  const b = coef[1]!;
  const q = coef[2] ?? 0;
  // Through the measured point nearest the budget: the shape from all the points, the level from
  // the one closest to the edge.
  const near = pts.reduce(
    (best, p, i) => (Math.abs(p.peakBytes - budgetBytes) < Math.abs(pts[best]!.peakBytes - budgetBytes) ? i : best),
    0,
  );
  const x0 = xs[near]!;
  const a = ys[near]! - b * x0 - q * x0 * x0;
  let t: number;
  if (q > 0) {
    const disc = b * b - 4 * q * (a - budgetBytes);
    if (disc < 0) return null;
    t = (-b + Math.sqrt(disc)) / (2 * q);
  } else {
    if (!(b > 0)) return null;
    t = (budgetBytes - a) / b;
  }
  const edge = mu + t * sc;
  return Number.isFinite(edge) ? Math.floor(edge + 1e-9) : null;
}

function dedupe(points: readonly PeakPoint[]): PeakPoint[] {
  const byUnits = new Map<number, number>();
  for (const p of points) byUnits.set(p.units, p.peakBytes);
  return [...byUnits].map(([units, peakBytes]) => ({ units, peakBytes })).sort((x, y) => x.units - y.units);
}

/**
 * The coefficients (lowest power first) of the degree `k - 1` polynomial nearest the points in
 * squares (normal equations, Gauss–Jordan with partial pivoting); null when singular.
 */
function solveLeastSquares(xs: readonly number[], ys: readonly number[], k: number): number[] | null {
  const m = Array.from({ length: k }, (_, i) =>
    Array.from({ length: k + 1 }, (_, j) =>
      j < k ? xs.reduce((s, x) => s + x ** (i + j), 0) : xs.reduce((s, x, n) => s + ys[n]! * x ** i, 0),
    ),
  );
  for (let col = 0; col < k; col++) {
    const pivot = m
      .slice(col)
      .reduce((best, row, r) => (Math.abs(row[col]!) > Math.abs(m[best]![col]!) ? col + r : best), col);
    [m[col], m[pivot]] = [m[pivot]!, m[col]!];
    const p = m[col]![col]!;
    if (Math.abs(p) < 1e-12) return null;
    for (let r = 0; r < k; r++) {
      if (r === col) continue;
      const row = m[r]!;
      const f = row[col]! / p;
      for (let j = col; j <= k; j++) row[j] = row[j]! - f * m[col]![j]!;
    }
  }
  return m.map((row, i) => row[k]! / row[i]!);
}
