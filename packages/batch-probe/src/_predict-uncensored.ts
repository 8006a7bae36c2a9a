// The predictive search where a failed trial still reports its peak (a peak gate lets the step run
// to its end): the ceiling first, then the edge a peak model puts under the budget, confirmed by
// its neighbour; a walk and a small bisection absorb measurement noise near the edge.
import type { PredictContext, PredictTools } from './_predict-context';
import { fitEdge } from './_predict';

/** A trial whose peak lies within this fraction of the budget may be next to the edge: its neighbour is tried next. */
const NEAR_EDGE = 0.05;

export async function uncensoredSearch(ctx: PredictContext, tools: PredictTools): Promise<void> {
  const { trials, state: st, ceilingUnits } = ctx;
  const { bound, cont, attempt, double } = tools;
  // Worst case over the outcomes of trying e (and its neighbour when confirming), then refine's rest.
  const affordable = (e: number, confirm: boolean) => {
    const ifFails = confirm && e - 1 > st.lastGood ? 2 + cont(st.lastGood, e - 1) : 1 + cont(st.lastGood, e);
    const ifFits = confirm ? (e + 1 < tools.high() ? 2 + cont(e + 1, st.firstBad) : 1) : 1 + cont(e, st.firstBad);
    return trials.length + Math.max(ifFails, ifFits) <= bound;
  };
  let streak = 0; // consecutive prediction rounds that moved the same end of the bracket
  let lastMove: 'up' | 'down' | null = null;
  // After a confirmation that did not close the edge (b* and b* + 1 both fit, or b* and
  // b* - 1 both fail), the direction to walk in while the model misses its own points (noise):
  // in a noisy band any measured fit next to a measured failure is a confirmed edge, and the
  // nearest sizes are the likeliest to give one. Steps of 1, 2, 4, ... from the end of the
  // bracket the walk moves, so that a long walk costs a logarithm; the first step the other
  // way leaves a small bracket to bisect.
  let walk: 'up' | 'down' | null = null;
  // Whether the last prediction measured a peak within NEAR_EDGE of the budget: the model is
  // tracking the edge, so a run of moves on one side is not a stall.
  let lastNearEdge = false;
  let walked = 0;
  for (let round = 0; round < 4 * bound; round++) {
    const high = tools.high();
    if (high - st.lastGood <= 1) break;
    const m = tools.measured();
    if (m === null) break;
    const { points, budget } = m;
    const single = new Set(points.map((p) => p.units)).size === 1;
    let e: number;
    let confirm: boolean;
    let kind: 'far' | 'walk' | 'bisect' | 'predict';
    const fit = fitEdge(points, budget);
    if (single && st.firstBad === undefined) {
      // One measured size and nothing failed: one point cannot tell the fixed part of the peak
      // from the part that grows with the batch (the proportional guess undershoots badly when
      // the fixed part dominates), and two close points give no slope under measurement
      // noise. So the second trial goes as far as allowed: the ceiling either fits (the answer)
      // or brackets the edge with the widest span there is to take a slope on.
      if (fit === null) {
        if (await double()) continue;
        break;
      }
      e = ceilingUnits;
      confirm = false;
      kind = 'far';
    } else if (walk !== null && (fit === null || !fit.consistent)) {
      const step = 2 ** Math.min(walked, 30);
      e = walk === 'up' ? Math.min(st.lastGood + step, high - 1) : Math.max(high - step, st.lastGood + 1);
      confirm = false;
      kind = 'walk';
    } else if (streak >= 2 && st.firstBad !== undefined && !lastNearEdge) {
      // Regula falsi stalls on one side of a curved peak: one bisection step moves the other end.
      e = st.lastGood + Math.floor((high - st.lastGood) / 2);
      confirm = false;
      streak = 0;
      kind = 'bisect';
    } else {
      if (fit === null) {
        if (await double()) continue;
        break;
      }
      // A nearly flat rise (under 0.5 % of the budget between the measured sizes: allocator
      // granularity, not a slope) extrapolates far: with no failure seen, such a jump goes no
      // further than doubling would.
      const peaks = points.map((p) => p.peakBytes);
      const flat = !single && Math.max(...peaks) - Math.min(...peaks) < 0.005 * budget;
      const reach = st.firstBad === undefined && flat ? 2 * st.lastGood : high - 1;
      // One point (the far trial failed without a measured peak): the proportional guess or a
      // doubling, whichever is larger — a closer second point gives no slope.
      const least = single ? 2 * st.lastGood : st.lastGood + 1;
      e = Math.min(high - 1, reach, Math.max(least, fit.edge));
      // A first (proportional) guess is a new point, not an edge to confirm.
      confirm = !single;
      kind = 'predict';
    }
    // Where confirming could exceed the bound, a single trial may still fit under it.
    if (confirm && !affordable(e, true) && affordable(e, false)) confirm = false;
    if (!affordable(e, confirm)) {
      // Once a prediction was made, the bound was checked with bisection as what follows it.
      if (!tools.predictedYet() && (await double())) continue;
      break;
    }
    const fits = await attempt(e, 'predict');
    // A size whose peak came out far from the budget (or unmeasured) is not next to the edge:
    // predicting again, with this point, beats stepping to its neighbour.
    const peakAtE = trials.at(-1)!.censored === true ? undefined : trials.at(-1)!.peakBytes;
    lastNearEdge = typeof peakAtE === 'number' && Math.abs(peakAtE - budget) <= NEAR_EDGE * budget;
    if (!lastNearEdge) confirm = false;
    if (kind === 'walk') {
      walked += 1;
      if (fits !== (walk === 'up')) break; // turned: bisect the small bracket left
      continue;
    }
    if (kind === 'far') continue;
    // Confirm: b* fits → b* + 1; b* fails → b* - 1. Either closes the edge, or sets the walk.
    walk = null;
    if (confirm) {
      const next = fits ? e + 1 : e - 1;
      const inside = fits ? next < tools.high() : next > st.lastGood;
      if (inside) {
        await attempt(next, 'predict');
        walk = fits ? 'up' : 'down';
        walked = 0;
      }
    }
    const move = fits ? 'up' : 'down';
    streak = kind === 'predict' && move === lastMove ? streak + 1 : 1;
    lastMove = move;
  }
}
