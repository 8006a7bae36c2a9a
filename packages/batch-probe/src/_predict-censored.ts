// The predictive search where a failed trial is stopped at the budget (censored): its peak says
// only "more than the budget", so a failure bounds the bracket but adds no point to the fit, and a
// trial is worth most when it fits next to the edge. One rule: try the edge the measured peaks
// predict (the pessimistic one while only two sizes are measured); a fit there adds the point
// nearest the budget, from which the next prediction barely extrapolates.
import type { PredictContext, PredictTools } from './_predict-context';
import { cautiousEdge, noisyEdge } from './_predict';

export async function censoredSearch(ctx: PredictContext, tools: PredictTools): Promise<void> {
  const { trials, state: st } = ctx;
  const { bound, cont, attempt, double } = tools;
  // Whether refine's bisection after a trial at e, whichever its outcome, stays within the bound.
  const affordable = (e: number, extra = 1) =>
    trials.length + extra + Math.max(cont(st.lastGood, e), cont(e, st.firstBad)) <= bound;
  let misses = 0; // trials in a row that the model put under the budget and that failed
  for (let round = 0; round < 4 * bound; round++) {
    const high = tools.high();
    if (high - st.lastGood <= 1) break;
    const m = tools.measured();
    if (m === null) break;
    const sizes = new Set(m.points.map((p) => p.units)).size;
    // One measured size cannot tell the fixed part of the peak from the part that grows with the
    // batch, and a failure far up adds no point: refine's doubling gives the second one. Two
    // sizes cannot tell a line from an attention term: the most bent-up peak they allow (the
    // earliest edge) gives a third point that fits under either.
    const edge = sizes < 2 ? null : sizes === 2 ? cautiousEdge(m.points, m.budget) : noisyEdge(m.points, m.budget);
    if (edge === null) {
      if (await double()) continue;
      break;
    }
    let e = edge;
    let expectFail = false;
    if (edge >= high) {
      // A failure contradicts the model (noise in its points): walk down from the failure, 1, 2, 4, ... sizes.
      e = high - 2 ** Math.max(0, misses - 1);
    } else if (sizes > 2 && !(affordable(edge + 1, 2) && (edge - 1 <= st.lastGood || affordable(edge - 1, 2)))) {
      // Either outcome at the edge could leave the bound no room for the neighbour (the bisection
      // that may follow runs up to the ceiling while nothing has failed): one past it goes first,
      // and its failure, the expected outcome, bounds the bracket.
      e = edge + 1;
      expectFail = true;
    }
    e = Math.max(st.lastGood + 1, Math.min(high - 1, e));
    if (!affordable(e)) {
      // The nearest size the bound affords, on the side the model expects this trial to land.
      let s = e;
      while (!affordable(s) && (expectFail ? s < high - 1 : s > st.lastGood + 1)) s += expectFail ? 1 : -1;
      if (!affordable(s)) {
        if (!tools.predictedYet() && (await double())) continue;
        break;
      }
      e = s;
    }
    if (await attempt(e, 'predict')) misses = 0;
    else if (edge >= e) misses += 1;
  }
}
