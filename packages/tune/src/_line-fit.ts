// The straight line through a row's timing runs (time against steps) that every step time of
// `--try` is read from, and the t quantile its noise is judged by.

/**
 * Step time = the least-squares slope of a run's time (by either clock) against its number of
 * steps (start-up costs are the intercept), with the residual sum of squares (0 with two points)
 * and the spread of the steps (sxx) that its standard error needs.
 */
export function slope(points: Map<number, number>): { stepMs: number; rss: number; sxx: number } {
  const xs = [...points.keys()];
  const ys = xs.map((x) => points.get(x)!);
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  const sxx = xs.reduce((a, x) => a + (x - mx) ** 2, 0);
  const b = xs.reduce((a, x, i) => a + (x - mx) * (ys[i]! - my), 0) / sxx;
  if (n < 3) return { stepMs: b, rss: 0, sxx };
  const rss = xs.reduce((a, x, i) => a + (ys[i]! - (my + b * (x - mx))) ** 2, 0);
  return { stepMs: b, rss, sxx };
}

/** One timing run: its wall time and its output span (null when it printed nothing), in ms. */
export interface TimedRun {
  wallMs: number;
  spanMs: number | null;
}

export type Clock = 'output' | 'wall';

/** Student's t at 97.5 % for 1…10 degrees of freedom (about 2 beyond). */
const T975 = [Number.NaN, 12.71, 4.3, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23];
export const tQuantile = (dof: number): number => (dof <= 10 ? T975[dof]! : 2);
