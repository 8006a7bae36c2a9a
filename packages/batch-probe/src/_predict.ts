// The arithmetic of the predictive search: where a linear peak model puts the largest size
// under the budget, from the trials that reported a measured peak.

export interface PeakPoint {
  /** Batch size in search units (size / multipleOf). */
  units: number;
  peakBytes: number;
}

/** Points within this fraction of the budget of the fitted line count as a good fit. */
export const FIT_TOLERANCE = 0.01;

/**
 * The largest `units` the model `peak = a + c * units` keeps within `budgetBytes`, or null when
 * the points cannot say (fewer than one, a non-increasing peak, or a poor fit).
 * - One point: the proportional guess `budget * u / peak`. With `a >= 0` and that point within
 *   the budget, it never lies beyond the true edge of a linear peak, so it usually fits and
 *   becomes a second point close to the edge.
 * - A bracket (a point within the budget below one above it): linear interpolation between the
 *   two nearest, which stays inside the bracket.
 * - Otherwise, two or more: least squares over the (up to) three points nearest the budget; with three, the
 *   fit must pass within {@link FIT_TOLERANCE} of the budget at every point, else null (allocator
 *   steps, noise, curvature: the caller falls back to bisection).
 */
export function predictEdge(points: readonly PeakPoint[], budgetBytes: number): number | null {
  const byUnits = new Map<number, number>();
  for (const p of points) byUnits.set(p.units, p.peakBytes);
  const pts = [...byUnits].map(([units, peakBytes]) => ({ units, peakBytes }));
  if (pts.length === 0 || !(budgetBytes > 0)) return null;
  if (pts.length === 1) {
    const p = pts[0]!;
    return p.peakBytes > 0 ? Math.floor((budgetBytes * p.units) / p.peakBytes) : null;
  }
  // A bracket (one size measured within the budget, one above it): interpolate between the two
  // nearest. The answer stays inside the bracket whatever the curve (steps, curvature, noise).
  const below = pts.filter((p) => p.peakBytes <= budgetBytes).sort((x, y) => y.units - x.units)[0];
  const above = pts.filter((p) => p.peakBytes > budgetBytes).sort((x, y) => x.units - y.units)[0];
  if (below && above && above.units > below.units && above.peakBytes > below.peakBytes) {
    const slope = (above.peakBytes - below.peakBytes) / (above.units - below.units);
    return below.units + Math.floor((budgetBytes - below.peakBytes) / slope);
  }
  const near = pts.sort((x, y) => Math.abs(x.peakBytes - budgetBytes) - Math.abs(y.peakBytes - budgetBytes)).slice(0, 3);
  const n = near.length;
  const mx = near.reduce((s, p) => s + p.units, 0) / n;
  const my = near.reduce((s, p) => s + p.peakBytes, 0) / n;
  let sxx = 0;
  let sxy = 0;
  for (const p of near) {
    sxx += (p.units - mx) ** 2;
    sxy += (p.units - mx) * (p.peakBytes - my);
  }
  if (sxx === 0) return null;
  const c = sxy / sxx;
  if (!(c > 0)) return null;
  const a = my - c * mx;
  if (n >= 3 && near.some((p) => Math.abs(a + c * p.units - p.peakBytes) > FIT_TOLERANCE * budgetBytes)) return null;
  return Math.floor((budgetBytes - a) / c);
}
