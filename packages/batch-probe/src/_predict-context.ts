// What the two predictive searches share: the trials so far, the bracket they move, and the
// trial bound that keeps either within the most trials refine could make.
import type { PeakPoint } from './_predict';
import { refineContinuationBound, refineTrialBound } from './_refine-bound';
import type { TrialPhase, TrialRecord } from './types';

/** The bracket: `lastGood` fits, `firstBad` (when set) does not; sizes in search units. */
export interface SearchState {
  lastGood: number;
  firstBad: number | undefined;
  doublings: number;
}

export interface PredictContext {
  trials: readonly TrialRecord[];
  fitsAt: (units: number, phase: TrialPhase) => Promise<boolean>;
  /** Moved by the search; probeBatchSize reads it back to bisect what is left. */
  state: SearchState;
  startUnits: number;
  ceilingUnits: number;
  maxDoublings: number;
  multipleOf: number;
}

export interface PredictTools {
  /** The most trials refine makes for this start and ceiling, over every capacity. */
  bound: number;
  /** The open top of the bracket: the smallest size seen to fail, or one past the ceiling. */
  high: () => number;
  /** The most trials refine's bisection (or doubling then bisection) takes from a bracket. */
  cont: (good: number, bad: number | undefined) => number;
  /** Runs one trial and moves the bracket. */
  attempt: (units: number, phase: TrialPhase) => Promise<boolean>;
  /** Refine's next step while no size has failed: a doubling. False when there is none to make. */
  double: () => Promise<boolean>;
  /** The trials with a measured (uncensored) peak, and the budget they report; null when none. */
  measured: () => { points: PeakPoint[]; budget: number } | null;
  predictedYet: () => boolean;
}

export function predictTools(ctx: PredictContext): PredictTools {
  const { trials, state: st, ceilingUnits, maxDoublings, multipleOf } = ctx;
  const attempt = async (units: number, phase: TrialPhase): Promise<boolean> => {
    const fits = await ctx.fitsAt(units, phase);
    if (fits) st.lastGood = Math.max(st.lastGood, units);
    else st.firstBad = st.firstBad === undefined ? units : Math.min(st.firstBad, units);
    return fits;
  };
  return {
    bound: refineTrialBound(ctx.startUnits, ceilingUnits, maxDoublings),
    high: () => st.firstBad ?? ceilingUnits + 1,
    cont: (good, bad) => refineContinuationBound(good, bad ?? ceilingUnits + 1, ceilingUnits, maxDoublings),
    attempt,
    double: async () => {
      if (st.firstBad !== undefined || st.doublings >= maxDoublings || st.lastGood >= ceilingUnits) return false;
      if (await attempt(Math.min(st.lastGood * 2, ceilingUnits), 'double')) st.doublings += 1;
      return true;
    },
    measured: () => {
      // A censored trial (stopped at the budget, killed, out of memory) only says "more than the
      // budget": it bounds the bracket (it failed), it is never a point of the fit.
      const measured = trials.filter(
        (t) => typeof t.peakBytes === 'number' && typeof t.budgetBytes === 'number' && t.censored !== true,
      );
      const budget = measured.at(-1)?.budgetBytes;
      if (budget === undefined) return null;
      return { points: measured.map((t) => ({ units: t.batchSize / multipleOf, peakBytes: t.peakBytes! })), budget };
    },
    predictedYet: () => trials.some((t) => t.phase === 'predict'),
  };
}
