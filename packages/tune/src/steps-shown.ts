// A timing run must show that it ran its steps. A trainer that exits 0 before {probe_steps} (a
// dataset shorter than the run, a flag it ignores, a step cap of its own) takes as long for 17
// steps as for 9: the slope through its runs is near zero and reads as thousands of samples/s.
// Evidence, the first that applies:
//   - the trainer's own step count (`stepsSeen`: a line it printed, its trainer_state.json): a run it
//     counted short is not timed; every run counted at least its steps (the one-step run may go
//     without a count) is;
//   - its output, when the characters it printed grew from the shortest run to the longest (no
//     clock noise in a count): it decides, and must grow from each run to the next longer one in
//     step with the steps, each segment at least 9/10 of the growth per step over all the runs. A
//     trainer that stopped after D of the 1 + 2K steps is caught for D − 1 < 2K / 1.1 (about
//     1.8K); past that, the slope it gives is off by under 10 %;
//   - else (no output, or the same in every run) the wall clock: it grew over the runs by more than
//     twice the run-to-run noise when one is known, each segment at least a quarter of the growth
//     per step (a disturbed run of a shared machine is within that; a stop before about 1 + 1.1K
//     steps is not).
// Otherwise the row is "not timed": it cannot win.
/** What one timing run showed of its steps: its wall time, its output's size, and the trainer's own count. */
export interface StepsRun {
  wallMs: number;
  /** Characters printed on stdout and stderr (null or absent: not known). */
  outputChars?: number | null;
  /** The trainer's own count of the steps it ran (null or absent: it gave none). */
  stepsSeen?: number | null;
}

/** Each segment between runs grows by at least this fraction of the growth per step over all the runs. */
export const SEGMENT_GROWTH = { output: 0.9, wall: 0.25 } as const;

/** Whether `points` ([steps, value], by steps) grew with the steps: overall, by over 2 × `noise`, and each segment. */
function grew(points: readonly [number, number][], fraction: number, noise: number | null): boolean {
  const [n0, v0] = points[0]!;
  const [n1, v1] = points.at(-1)!;
  const slope = (v1 - v0) / (n1 - n0);
  if (!(slope > 0)) return false;
  if (noise !== null && v1 - v0 <= 2 * noise) return false;
  for (let i = 1; i < points.length; i++) {
    const [a, va] = points[i - 1]!;
    const [b, vb] = points[i]!;
    if ((vb - va) / (b - a) < fraction * slope) return false;
  }
  return true;
}

/**
 * Whether a row's timing runs (steps → run, two or more) show their steps, and by what; or why not,
 * a sentence for the row's note. `noiseMs`: the run-to-run standard deviation of the wall time
 * (pooled over the rows), null when none is known yet.
 */
export function stepsShown(
  runs: ReadonlyMap<number, StepsRun>,
  noiseMs: number | null = null,
): { shown: true; by: 'trainer' | 'output' | 'wall' } | { shown: false; why: string } {
  const sorted = [...runs].sort((a, b) => a[0] - b[0]);
  if (sorted.length < 2) return { shown: true, by: 'wall' };
  const counted = sorted.filter(([, r]) => typeof r.stepsSeen === 'number');
  const short = counted.find(([n, r]) => r.stepsSeen! < n);
  if (short !== undefined)
    return { shown: false, why: `not timed: the trainer counted ${short[1].stepsSeen} steps in a run of ${short[0]}` };
  // The run of one step may be the fit trial, which carries no count: a trainer that ran none of it
  // only makes the slope steeper (slower), never a false winner.
  if (counted.length > 0 && sorted.every(([n, r]) => n === 1 || typeof r.stepsSeen === 'number'))
    return { shown: true, by: 'trainer' };
  const chars = sorted.flatMap(([n, r]) =>
    typeof r.outputChars === 'number' ? [[n, r.outputChars] as [number, number]] : [],
  );
  // Output that grew from the shortest run to the longest decides: a longer run that printed no more
  // than a shorter one stopped (the wall clock's start-up noise can hide that a stop left it flat).
  const printed = chars.length >= 2 && chars.at(-1)![1] > chars[0]![1];
  const growing = printed && chars.every(([, c], i) => i === 0 || c > chars[i - 1]![1]);
  if (growing && grew(chars, SEGMENT_GROWTH.output, null)) return { shown: true, by: 'output' };
  const wallPoints = sorted.map(([n, r]) => [n, r.wallMs] as [number, number]);
  if (!printed && grew(wallPoints, SEGMENT_GROWTH.wall, noiseMs)) return { shown: true, by: 'wall' };
  const steps = sorted.map(([n]) => n).join(', ');
  const walls = sorted.map(([, r]) => `${Math.round(r.wallMs)}`).join(', ');
  return {
    shown: false,
    why:
      `not timed: the runs of ${steps} steps took ${walls} ms` +
      `${chars.length >= 2 ? `, printed ${chars.map(([, c]) => c).join(', ')} characters` : ''}` +
      ': they did not grow in step with the steps (did the trainer stop before {probe_steps}?)',
  };
}
