// Today's trial bound: the most trials the refine search (halve, double, bisect) makes for a
// given start and ceiling, over every capacity a monotone probe can have. The predictive search
// stops predicting when it could exceed it.

function refineTrials(startUnits: number, ceilingUnits: number, maxDoublings: number, capacity: number): number {
  let n = 0;
  const fits = (u: number) => {
    n += 1;
    return u <= capacity;
  };
  let found: number | undefined;
  let firstBad: number | undefined;
  for (let u = startUnits; u >= 1; u = Math.floor(u / 2)) {
    if (fits(u)) {
      found = u;
      break;
    }
    firstBad = u;
  }
  if (found === undefined) return n;
  let lastGood = found;
  let doublings = 0;
  while (doublings < maxDoublings && lastGood < ceilingUnits) {
    const c = Math.min(lastGood * 2, ceilingUnits);
    if (firstBad !== undefined && c >= firstBad) break;
    if (!fits(c)) {
      firstBad = c;
      break;
    }
    lastGood = c;
    doublings += 1;
  }
  let high = firstBad ?? ceilingUnits + 1;
  while (high - lastGood > 1) {
    const mid = lastGood + Math.floor((high - lastGood) / 2);
    if (fits(mid)) lastGood = mid;
    else high = mid;
  }
  return n;
}

const memo = new Map<string, number>();

/** The largest number of trials refine makes from `startUnits` up to `ceilingUnits`, over every capacity 0..ceiling. */
export function refineTrialBound(startUnits: number, ceilingUnits: number, maxDoublings: number): number {
  const key = `${startUnits}|${ceilingUnits}|${maxDoublings}`;
  const hit = memo.get(key);
  if (hit !== undefined) return hit;
  let worst: number;
  if (ceilingUnits > 1 << 16)
    worst = 2 * Math.ceil(Math.log2(ceilingUnits)) + 2; // too many capacities to walk: the documented formula
  else {
    worst = 0;
    for (let cap = 0; cap <= ceilingUnits; cap++)
      worst = Math.max(worst, refineTrials(startUnits, ceilingUnits, maxDoublings, cap));
  }
  if (memo.size > 256) memo.clear();
  memo.set(key, worst);
  return worst;
}

/**
 * The most trials refine's remaining steps can take from a state: bisection of
 * (lastGood, firstBad) when a size has failed, else doubling from `lastGood` then bisection,
 * over every capacity from `lastGood` up to the ceiling.
 */
export function refineContinuationBound(
  lastGood: number,
  firstBad: number | undefined,
  ceilingUnits: number,
  maxDoublings: number,
): number {
  if (firstBad !== undefined) return Math.ceil(Math.log2(Math.max(1, firstBad - lastGood)));
  if (ceilingUnits - lastGood > 1 << 16) return 2 * Math.ceil(Math.log2(ceilingUnits - lastGood + 1)) + 1;
  const key = `c|${lastGood}|${ceilingUnits}|${maxDoublings}`;
  const hit = memo.get(key);
  if (hit !== undefined) return hit;
  let worst = 0;
  for (let cap = lastGood; cap <= ceilingUnits; cap++) {
    let n = 0;
    let good = lastGood;
    let bad: number | undefined;
    let d = 0;
    while (d < maxDoublings && good < ceilingUnits) {
      const c = Math.min(good * 2, ceilingUnits);
      n += 1;
      if (c > cap) {
        bad = c;
        break;
      }
      good = c;
      d += 1;
    }
    let high = bad ?? ceilingUnits + 1;
    while (high - good > 1) {
      const mid = good + Math.floor((high - good) / 2);
      n += 1;
      if (mid <= cap) good = mid;
      else high = mid;
    }
    worst = Math.max(worst, n);
  }
  if (memo.size > 256) memo.clear();
  memo.set(key, worst);
  return worst;
}
