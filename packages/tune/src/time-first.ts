// soup train's tuner (tune-train): a heavier candidate (full checkpointing, an offload) timed
// before it is fitted. It is tried only above the micro-batches the lighter ones fit; where that
// leaves one micro-batch, and the step runs on the CPU, its timing comes first and its fit (a probe
// child, about 2 s at m = 32 on the small template) only when the timing says it can win: a
// candidate that cannot win at its one micro-batch cannot win whether it fits or not. On a GPU a
// step that may not fit is never run in this process (it would run the device out of memory under
// the run's own sessions), so there the fit comes first, as for every other candidate.

/**
 * Where a heavier candidate may be timed before its fit: the one divisor of G above `floor` (the
 * largest micro-batch a lighter candidate fits), on the CPU, when the host memory this process can
 * reach (`holdBytes`) holds a bound on its step: `boundBytes` = 2 × (m / floor) × `lighterPeak`
 * (the lighter candidate's measured peak at `floor`). The heavier step holds no more than the
 * lighter one at the same micro-batch; a step's memory is a fixed part plus a part per sample, so
 * at m it is at most m / floor times its measure at floor; and the allocator grows in chunks that
 * at most double what is asked. Null: fit first (a GPU, several micro-batches above the floor, no
 * lighter peak measured, or too little host memory).
 */
export function timeFirstAt(o: {
  device: 'cpu' | 'cuda';
  divisors: readonly number[];
  floor: number;
  lighterPeak: number | null;
  holdBytes: number;
}): { m: number; boundBytes: number } | null {
  const above = o.divisors.filter((d) => d > o.floor);
  if (o.device !== 'cpu' || above.length !== 1 || o.floor <= 0 || o.lighterPeak === null) return null;
  const m = above[0]!;
  const boundBytes = 2 * (m / o.floor) * o.lighterPeak;
  return boundBytes <= o.holdBytes ? { m, boundBytes } : null;
}

/** What timing first gave: cannot win (never fitted), or it can and was then fitted (or found not to fit). */
export type TimedFirst<T, R> =
  | { kind: 'cannot-win'; timing: T }
  | { kind: 'fits'; timing: T; fit: R }
  | { kind: 'does-not-fit'; timing: T };

/**
 * Times the candidate's one micro-batch (`time`: a timing with the early stop against the best so
 * far), then fits it (`fit`: the probe's search above the floor, null when nothing fits) only when
 * the timing ran to the end; `fitsAt` says whether that fit reached the micro-batch timed.
 */
export async function timeThenFit<T extends { stoppedEarly: boolean }, R>(o: {
  time: () => Promise<T>;
  fit: () => Promise<R | null>;
  fitsAt: (r: R) => boolean;
}): Promise<TimedFirst<T, R>> {
  const timing = await o.time();
  if (timing.stoppedEarly) return { kind: 'cannot-win', timing };
  const fit = await o.fit();
  return fit !== null && o.fitsAt(fit) ? { kind: 'fits', timing, fit } : { kind: 'does-not-fit', timing };
}
