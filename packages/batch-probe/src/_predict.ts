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
