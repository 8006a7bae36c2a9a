// `gradient_checkpointing: auto` in soup train / soup plan: a measured choice. Each tier (off,
// selective, full) gets its largest micro-batch m (a divisor of G that fits, the batch cache
// first for the lightest tier; a heavier tier only above what the lighter ones fit); its step is
// timed in this process (a warm-up, then timed steps) from m / 2 up while faster, else down while
// faster (on a CPU the largest m is not always the fastest per sample: micro-walk); the two
// lightest (no checkpointing and selective) walk together: their opening two micro-batches (m / 2
// and m) all four timed side by side, in turn, so that each one's slope and the two at each m are
// compared under one load, then side by side at each m both take (step-timing). A heavier tier is
// not tried at all when a lighter one is already past its best micro-batch (pastItsBest); on the
// CPU, one left with a single micro-batch above the lighter ones' is timed before it is fitted,
// and fitted only if it can win (time-first). Below G a timing is of the accumulate path's
// micro-step, and an optimizer step counts a of them and the update once, timed once (global-step).
// The most samples per second at G wins, a tie within the noise going to the lower peak, once
// the two were timed side by side: from the start, or again at the end
// (settle-tie), on their sessions kept warm from the first timing; the tie that decides whether a
// lighter candidate is past its best is timed again before a heavier one is searched. The choice is
// remembered in the tune cache.
import { divisorsOf } from '@soup/batch-probe';
import { type Candidate, type MicroFit, type TrainState, type TuneTrainOptions, candidateOf } from './_train-state';
import { pairedStartOf, searchTrain } from './_train-search';
import { NothingChosenError } from './errors';
import type { UpdateTiming } from './global-step';
import { holdBytesOf, KeptSessions } from './kept-sessions';
import type { OpenStep, StepOffload } from './step-timing';
import { type TuneEvent, tune } from './tune';
import type { TuneEntry, TuneRow } from './tune-cache';

export type { MicroFit, TuneTrainOptions } from './_train-state';
export { pastItsBest } from './past-its-best';

/** The checkpointing tiers `gradient_checkpointing: auto` chooses between, lightest first (null: none). */
export const TRAIN_TIERS: readonly ('selective' | 'full' | null)[] = [null, 'selective', 'full'];
const nameOf = (g: string | null): string => g ?? 'false';
const offloadName = (p: StepOffload | null): string => p?.target ?? 'null';
/** How much work a tier adds, for the search floors: none and selective alike (see tuneTrain), full more. */
const workRank = (g: string | null): number => (g === 'full' ? 1 : 0);

/** What tuneTrain chose: the tier `T` (null: none), its recompute set and offload, at micro-batch m. */
export interface TrainTuneResult<T extends string, R extends MicroFit> {
  entry: TuneEntry;
  source: 'measured' | 'cache';
  granularity: T | null;
  recompute: string[];
  /** The chosen activation offload (null: none). */
  offload: StepOffload | null;
  microBatchSize: number;
  /** The chosen candidate's micro-batch search (null from the tune cache, or when m is not its largest). */
  resolution: R | null;
  /** The fit trial at the chosen candidate and micro-batch, when the search ran one there. */
  measured: R['trials'][number] | null;
  /** The accumulate path's update the rows were counted with (null: from the cache, or G = 1). */
  update: UpdateTiming | null;
}

/** How a row's step and samples/s count the optimizer step (the table's `step times:` line). */
const countedAs = (u: UpdateTiming): string =>
  `at a = G / m > 1, each row's step is its optimizer step over a: a micro-steps (the accumulate path's ` +
  `forward/backward, timed at m) and the update (${u.updateMs.toFixed(1)} ms, timed once in accumulated ` +
  `steps at ${u.microBatchSize}) once; at a = 1 the whole step`;

/** Every tier × offload, offloads varying slowest; a row's lever values name the candidate. */
function candidatesOf<T extends string, R extends MicroFit>(o: TuneTrainOptions<T, R>): Candidate<T>[] {
  return o.offloads.flatMap((off, oi) =>
    o.tiers.map((g) => {
      const values: Record<string, string> = { gradient_checkpointing: nameOf(g) };
      if (o.offloadIsLever) values.activation_offloading = offloadName(off);
      return {
        g,
        offload: off,
        rank: [workRank(g), oi] as [number, number],
        values,
        label: Object.entries(values)
          .map(([k, v]) => `${k}=${v}`)
          .join(', '),
        recompute: o.recomputeOf(g),
      };
    }),
  );
}

/** The `start` line: what the search will measure. */
function startMessage(
  what: string,
  G: number,
  steps: number,
  cpu: boolean,
  paired: Candidate<string>[] | null,
): string {
  return (
    `${what}: auto, measured: each choice's largest micro-batch (a divisor of ${G}) that fits, then its steps ` +
    `timed (a warm-up, then ${steps} steps; ` +
    `the mean of the fastest half) from half that micro-batch up while faster, else down while faster; full ` +
    `checkpointing and an offload are tried only where the lighter choices do not fit, and not when a lighter ` +
    `one is already slower at its largest micro-batch than below it` +
    (cpu
      ? " (on the CPU, one left with a single micro-batch above the lighter ones' is timed first and fitted " +
        'only if it can win)'
      : '') +
    '; ' +
    (paired
      ? `${paired[0]!.label} and ${paired[1]!.label} are timed side by side, in turn: at the first two ` +
        `micro-batches both take all four at once, then two at a time at each micro-batch both take; `
      : '') +
    `a tie that the lower peak would take from a faster one is timed again, the two alternately` +
    `${paired ? ', unless they were timed side by side already' : ''}`
  );
}

/**
 * Chooses the tier (and, with `offloadIsLever`, the offload) by measured speed through tune(),
 * its search given (see the file comment). Throws NothingChosenError when no candidate could be timed.
 */
export async function tuneTrain<T extends string, R extends MicroFit>(
  o: TuneTrainOptions<T, R>,
): Promise<TrainTuneResult<T, R>> {
  const G = o.globalBatchSize;
  const tries: Record<string, string[]> = { gradient_checkpointing: o.tiers.map(nameOf) };
  if (o.offloadIsLever) tries.activation_offloading = o.offloads.map(offloadName);
  const what = [o.tiers.length > 1 ? 'gradient_checkpointing' : null, o.offloadIsLever ? 'activation_offloading' : null]
    .filter((x) => x !== null)
    .join(' and ');
  const candidates = candidatesOf(o);
  const steps = o.steps ?? 6;
  const s: TrainState<T, R> = {
    o,
    G,
    steps,
    say: (event: TuneEvent): void => o.onEvent?.(event),
    candidates,
    byCandidate: new Map<Candidate<T>, TuneRow[]>(candidates.map((c) => [c, []])),
    divisors: divisorsOf(G),
    fitted: new Map(),
    fitAhead: new Map(),
    best: null,
    stopped: new Set(),
    kept: new KeptSessions<OpenStep>(holdBytesOf(o.device.kind, o.budgetBytes)),
    sideBySide: [],
    retimedEarly: [],
    update: undefined,
  };
  const r = await tune({
    candidates,
    globalBatchSize: G,
    worldSize: 1,
    search: () => searchTrain(s),
    about: {
      command: o.command,
      timeSteps: steps,
      budgetBytes: o.budgetBytes,
      gpuName: o.gpuName,
      gpuMemoryGb: o.gpuMemoryGb,
    },
    ...(o.noCache
      ? {}
      : {
          cache: {
            key: {
              // an entry whose rows charged the update to every micro-batch is measured again
              command: `${o.cacheCommand} update-once`,
              tries,
              budgetBytes: o.budgetBytes,
              gpuName: o.gpuName,
              gpuMemoryGb: o.gpuMemoryGb,
            },
            location: o.cache ?? {},
            hitMessage: (hit: TuneEntry) =>
              `${what}: auto, from the tune cache (measured ${hit.savedAt.replace(/\.\d+Z$/, 'Z')}` +
              `; --no-cache to measure again):`,
          },
        }),
    clock: () => (s.update ? countedAs(s.update) : undefined),
    startMessage: startMessage(what, G, steps, o.device.kind === 'cpu', pairedStartOf(candidates) ? candidates : null),
    ...(o.onEvent ? { onEvent: o.onEvent } : {}),
    ...(o.signal ? { signal: o.signal } : {}),
    nothingTimed: () => new NothingChosenError(`${what}: auto: no choice could be timed`),
  });
  const chosenRow = r.rows[r.choice]!;
  const c = candidateOf(candidates, chosenRow);
  const m = chosenRow.microBatchSize!;
  // The chosen candidate's search: its resolution when the choice is its largest m, and its fit trial at the chosen m.
  const fit = r.source === 'cache' ? undefined : [...s.fitted].find(([x]) => x.label === chosenRow.label)?.[1].r;
  return {
    entry: r.entry,
    source: r.source,
    granularity: c.g,
    recompute: c.recompute,
    offload: c.offload,
    microBatchSize: m,
    resolution: fit?.batchSize === m ? fit : null,
    measured: fit?.trials.filter((x) => x.batch_size === m && x.result === 'fit').pop() ?? null,
    update: r.source === 'cache' ? null : (s.update ?? null),
  };
}
