// What `--try` times a run's steps by. Each timing run of a trainer command gives two clocks: its
// wall time (spawn to exit) and, when it prints, the span of its output (first chunk to last, as
// the probe received them). A step time is the slope of either against the run's number of steps.
// The wall clock always holds the steps, but also the trainer's start-up, whose run-to-run swing
// (hundreds of ms on a shared machine: memory faulted in, imports, a model loaded) is the noise of
// the slope. The span leaves out what happens before the first line and after the last: for a
// trainer that prints as it steps it is the steps alone, to a few ms. It is used only when it
// measures the same thing as the wall clock, and better:
//   - every timed run printed;
//   - for every row the span grows with the steps (its slope is over half the wall clock's);
//   - it is at least as steady: its pooled residual variance is no larger than the wall clock's;
//   - for every row timed to the end its slope agrees with the wall clock's: the difference is
//     within Student's t (97.5 %, the pooled degrees of freedom) times its standard error, or 2 %
//     of the step, whichever is larger. The two clocks differ by about 1 % a step on a calm
//     machine (the probe's sampling, the run's exit); t, not 2, because three runs of one row
//     leave one degree of freedom, and a wall-clock noise read from it can be 10× too small (a
//     run where it read ±0.8 ms had the wall slope 2 % off the span's, the span being right).
// A trainer whose output is held in a buffer until it exits prints all at once (a span near 0 that
// does not grow); one that flushes every few steps grows in jumps (a wide residual, a slope off the
// wall clock's): both are timed by the wall clock. A row whose runs show a warm-up is read by
// either clock with its warm-up cancelled (warm-up.ts), so a warm-up weighs on neither clock's noise.
import { type Clock, slope, type TimedRun, tQuantile } from './_line-fit';
import { rowSteps } from './warm-up';

export { slope, tQuantile, type Clock, type TimedRun } from './_line-fit';

/** The two clocks agree when their slopes are within this fraction of the step, or within their noise. */
export const CLOCKS_AGREE_FRACTION = 0.02;

/** Row (any key) → steps → run. */
export type RunsByRow = ReadonlyMap<unknown, ReadonlyMap<number, TimedRun>>;

const pointsBy = (runs: ReadonlyMap<number, TimedRun>, clock: Clock): Map<number, number> =>
  new Map([...runs].map(([steps, r]) => [steps, clock === 'wall' ? r.wallMs : r.spanMs!]));

/** The residual degrees of freedom pooled over the rows with three runs or more. */
export function pooledDof(runs: RunsByRow): number {
  let dof = 0;
  for (const pts of runs.values()) if (pts.size >= 3) dof += pts.size - 2;
  return dof;
}

/** The residual variance of every row with three runs or more, pooled (null without one). */
export function pooledVariance(runs: RunsByRow, clock: Clock): number | null {
  const dof = pooledDof(runs);
  if (dof === 0) return null;
  let rss = 0;
  for (const pts of runs.values()) if (pts.size >= 3) rss += slope(pointsBy(pts, clock)).rss;
  return rss / dof;
}

/** A row's step time by `clock`, and its standard error under the pooled variance `v` (null without one). */
export function stepBy(
  pts: ReadonlyMap<number, TimedRun>,
  clock: Clock,
  v: number | null,
): { stepMs: number; seMs: number | null } {
  const s = slope(pointsBy(pts, clock));
  return { stepMs: s.stepMs, seMs: v === null ? null : Math.sqrt(v / s.sxx) };
}

/**
 * Which clock the rows are timed by, and why (a sentence for the table). All rows use the same
 * clock: whether a trainer's output tracks its steps is a property of the trainer.
 */
export function clockOf(runs: RunsByRow, K: number): { clock: Clock; why: string } {
  const spans = `1, ${1 + K} and ${1 + 2 * K} steps`;
  const timed = [...runs.values()].filter((pts) => pts.size >= 2);
  if (timed.length === 0) return { clock: 'wall', why: `the wall time of runs of ${spans}` };
  if (timed.some((pts) => [...pts.values()].some((r) => r.spanMs === null)))
    return {
      clock: 'wall',
      why: `the wall time of runs of ${spans} (a run printed nothing, so its output cannot time its steps)`,
    };
  // Both clocks are read by the same lines: the warm-ups the output shows (the steadier clock, when
  // it qualifies) are cancelled on the wall clock too, so the two compare like with like.
  const out = rowSteps(runs, 'output');
  const wall = rowSteps(runs, 'wall', out.warm);
  const vw = wall.variance;
  const vs = out.variance;
  if (vw === null || vs === null) return { clock: 'wall', why: `the wall time of runs of ${spans}` };
  const steps = [...runs]
    .filter(([, pts]) => pts.size >= 2)
    .map(([row, pts]) => ({ row, pts, w: wall.rows.get(row)!, o: out.rows.get(row)! }));
  if (steps.some(({ w, o }) => !(o.stepMs > 0.5 * w.stepMs)))
    return {
      clock: 'wall',
      why:
        `the wall time of runs of ${spans} (the output did not grow with the steps: printed only at exit, or ` +
        `buffered)`,
    };
  if (vs > vw)
    return {
      clock: 'wall',
      why: `the wall time of runs of ${spans} (the output's span was no steadier: it grew in jumps, not step by step)`,
    };
  // Agreement is asked only of the rows timed to the end. A row with two runs so far (waiting on
  // the early stop) is held to the growth alone: its wall slope has the start-up swing of two runs
  // in it, which the pooled noise of the full rows (one degree of freedom each) can understate;
  // its third run, when it gets one, brings the full check. So is a row whose warm-up is cancelled
  // while it has three runs: its slope is that of its last two.
  const t = tQuantile(Math.min(wall.dof, out.dof));
  for (const { row, pts, w, o } of steps) {
    if (pts.size < (out.warm.has(row) ? 4 : 3)) continue;
    const allowed = Math.max(t * Math.hypot(w.seMs!, o.seMs!), CLOCKS_AGREE_FRACTION * Math.abs(w.stepMs));
    if (Math.abs(o.stepMs - w.stepMs) > allowed)
      return {
        clock: 'wall',
        why:
          `the wall time of runs of ${spans} (the output's span gave ${o.stepMs.toFixed(1)} ms a step against ` +
          `the wall clock's ${w.stepMs.toFixed(1)}: more apart than their noise, or the 2 % two clocks may differ ` +
          `by)`,
      };
  }
  return {
    clock: 'output',
    why:
      `the span of the trainer's output, first line to last, in runs of ${spans} (start-up and exit left out; ` +
      `it grew with the steps and agreed with the wall times of the rows timed to the end)`,
  };
}
