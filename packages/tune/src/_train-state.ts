// What tuneTrain's search shares between its parts (the walk, the ties, the loop over candidates):
// its options, the rows so far by candidate, the best so far, the warm sessions kept, and the
// pairs timed side by side or again. One object, so that each part is a function of it.
import { type CacheLocationOptions, NoBatchFitsError } from '@soup/batch-probe';
import { peakIsLower } from './choose-configuration';
import { perMicroBatch, samplesPerSecondOf, stepAtGlobal, timeUpdate, type UpdateTiming } from './global-step';
import { type FitTrial, type KeptSessions, peakAtMost } from './kept-sessions';
import type { OpenStep, StepGptSpec, StepOffload, StepTiming, StepToTime, WinLimit } from './step-timing';
import type { TuneRow } from './tune-cache';
import type { TuneEvent } from './tune';

/** A micro-batch search's answer as tuneTrain reads it: the largest fitting m and the trials that found it. */
export interface MicroFit {
  batchSize: number;
  trials: readonly FitTrial[];
}

/** Options of tuneTrain: `T` a tier's name, `R` what `resolveMicro` answers. */
export interface TuneTrainOptions<T extends string, R extends MicroFit> {
  /** The model whose step is timed. */
  spec: StepGptSpec;
  /** G: the optimizer's batch; candidates' micro-batches are its divisors. */
  globalBatchSize: number;
  /** ONNX Runtime's intra-op threads for the timed steps (0: its default). */
  threads: number;
  /** The device the run trains on: every step is timed there. */
  device: { kind: 'cpu' | 'cuda'; id: number };
  /** The checkpointing tiers to choose between, lightest first (null: none). */
  tiers: readonly (T | null)[];
  /** The activation offloads to choose between, lightest first (null: none). */
  offloads: readonly (StepOffload | null)[];
  /** Whether the offload is chosen (`activation_offloading: auto`): then it is a lever in the rows and the key. */
  offloadIsLever: boolean;
  /** The blocks a tier recomputes. */
  recomputeOf(tier: T | null): string[];
  /** What the tune cache keys the choice by, beside the levers: the model and what else shapes a step. */
  cacheCommand: string;
  /** How the entry names what was tuned (its `command`). */
  command: string;
  budgetBytes: number | null;
  gpuName: string;
  gpuMemoryGb: number;
  /** Neither read nor write the tune cache. */
  noCache: boolean;
  /**
   * The largest fitting divisor of G for a recompute set and offload, searching only above `floor`
   * (a divisor the fits' peaks put well over the budget need not be tried). Throws NoBatchFitsError
   * when none fits.
   */
  resolveMicro(recompute: string[], floor: number, offload: StepOffload | null): Promise<R>;
  /** Timed steps per candidate after the warm-up. @default 6 */
  steps?: number;
  /** The working directory of the timed steps (a disk offload's scratch is relative to it). */
  cwd: string;
  /** Where the tune cache is (beside the batch cache). */
  cache?: CacheLocationOptions;
  /** Told what the tuner does, as it does it. */
  onEvent?: (event: TuneEvent) => void;
  /** Aborts between candidates: tuneTrain throws the signal's reason. */
  signal?: AbortSignal;
}

/** One candidate: a tier and an offload; `rank`: how far each lever is from the lightest. */
export interface Candidate<T extends string> {
  g: T | null;
  offload: StepOffload | null;
  rank: [number, number];
  label: string;
  values: Record<string, string>;
  recompute: string[];
}

/** The search's shared state. */
export interface TrainState<T extends string, R extends MicroFit> {
  o: TuneTrainOptions<T, R>;
  G: number;
  steps: number;
  say(event: TuneEvent): void;
  candidates: Candidate<T>[];
  /** Each candidate's rows, in the table's order. */
  byCandidate: Map<Candidate<T>, TuneRow[]>;
  divisors: number[];
  /** The fitted candidates: their search, and the floor it searched above. */
  fitted: Map<Candidate<T>, { r: R; floor: number }>;
  /** The second candidate's fit when found ahead of its turn, to walk beside the first (null: none fits). */
  fitAhead: Map<Candidate<T>, R | null>;
  best: TuneRow | null;
  stopped: Set<TuneRow>;
  /**
   * Warm sessions kept from their first timing, by row (label and m): those of the rows a tie's
   * second timing would take now (rowsToKeep: the fastest, and the row that would take a tie from
   * it), so that it needs no new session and no warm-up. At most two, beside the one being timed,
   * and only while the sessions held at once fit `holdBytes` (kept-sessions: on a GPU, the budget).
   */
  kept: KeptSessions<OpenStep>;
  /** Pairs (row keys) first timed side by side: a tie between them is settled by a timing under one load. */
  sideBySide: [string, string][];
  /** Pairs (row keys) timed again before the end, so that the end does not time them again. */
  retimedEarly: [string, string][];
  /**
   * The accumulate path's update (timeUpdate), timed before the first step is (updateOf); null when
   * G is 1 (nothing is accumulated).
   */
  update: UpdateTiming | null | undefined;
}

/**
 * The accumulate path's update (s.update), timed once, before the first step is timed, with c's
 * step at the smallest micro-batch (the update does not depend on m, and there it costs least).
 */
export const updateOf = async <T extends string, R extends MicroFit>(
  s: TrainState<T, R>,
  c: Candidate<T>,
): Promise<UpdateTiming | null> => {
  if (s.update !== undefined) return s.update;
  const m = s.divisors[0]!;
  s.update = 2 * m > s.G ? null : await timeUpdate(stepAt(s, c, m));
  return s.update;
};

export const keyOf = (r: TuneRow): string => `${r.label}\u0000${r.microBatchSize}`;
export const at = (r: TuneRow): string => `${r.label} at ${r.microBatchSize}`;
export const allRows = (s: TrainState<string, MicroFit>): TuneRow[] => [...s.byCandidate.values()].flat();

/** The candidate a row measured: by its label, else by its lever values. */
export const candidateOf = <T extends string>(candidates: readonly Candidate<T>[], r: TuneRow): Candidate<T> =>
  candidates.find((x) => x.label === r.label) ??
  candidates.find((x) => Object.entries(x.values).every(([k, v]) => r.values[k] === v))!;

/** A row's peak, or a bound on it from its candidate's fits at a larger m. */
export const peakOf = <T extends string, R extends MicroFit>(s: TrainState<T, R>, r: TuneRow): number | null =>
  r.peakBytes ?? peakAtMost(s.fitted.get(candidateOf(s.candidates, r))?.r.trials ?? [], r.microBatchSize!);

/** The indices of `rows` stopped early: they do not compete. */
export const excludedOf = (s: TrainState<string, MicroFit>, rows: readonly TuneRow[]): Set<number> =>
  new Set(rows.flatMap((r, i) => (s.stopped.has(r) ? [i] : [])));

/** A pair of row keys as indices into `rows`. */
export const indicesIn =
  (rows: readonly TuneRow[]) =>
  ([a, b]: [string, string]): [number, number] => [
    rows.findIndex((r) => keyOf(r) === a),
    rows.findIndex((r) => keyOf(r) === b),
  ];

/**
 * c's step at m, on the device the run trains on: below G a micro-step (soup train runs a of them
 * and one update), at G the whole step.
 */
export const stepAt = <T extends string>(s: TrainState<T, MicroFit>, c: Candidate<T>, m: number): StepToTime => ({
  microStep: m < s.G,
  executionProvider: s.o.device.kind,
  deviceId: s.o.device.id,
  spec: s.o.spec,
  recompute: c.recompute,
  batchSize: m,
  threads: s.o.threads,
  offload: c.offload,
  cwd: s.o.cwd,
});
export const stepOf = <T extends string>(s: TrainState<T, MicroFit>, r: TuneRow): StepToTime =>
  stepAt(s, candidateOf(s.candidates, r), r.microBatchSize!);

/** The peak r's fit measured at m (null: no fit trial there). */
export const fitPeak = (r: MicroFit, m: number): number | null =>
  r.trials.find((x) => x.batch_size === m && x.result === 'fit')?.peak_bytes ?? null;

/** Samples/s at G of a timing of `stepMs` at m (stepAt's step), the update counted once an optimizer step. */
export const perSecondAt = (s: TrainState<string, MicroFit>, m: number, stepMs: number): number =>
  samplesPerSecondOf(s.G, m, stepMs, s.update ?? null);

/**
 * A timing at m as a row: its step the optimizer step's time per micro-batch (perMicroBatch: a
 * micro-steps and the update once, over a), so that its samples/s is G / (a × step).
 */
export const rowOf = <T extends string>(
  s: TrainState<T, MicroFit>,
  c: Candidate<T>,
  r: MicroFit | null,
  m: number,
  t: StepTiming,
  stoppedEarly: boolean,
  note: string | null,
): TuneRow => {
  const shown = perMicroBatch(s.G, m, t, s.update ?? null);
  return {
    label: c.label,
    values: c.values,
    microBatchSize: m,
    accumulation: s.G / m,
    peakBytes: r === null ? null : fitPeak(r, m),
    stepMs: shown.stepMs,
    noiseMs: stoppedEarly ? null : shown.noiseMs,
    samplesPerSecond: perSecondAt(s, m, t.stepMs),
    note,
  };
};

export const skippedRow = <T extends string>(c: Candidate<T>, note: string): TuneRow => ({
  label: c.label,
  values: c.values,
  microBatchSize: null,
  accumulation: null,
  peakBytes: null,
  stepMs: null,
  noiseMs: null,
  samplesPerSecond: null,
  note,
});

/**
 * A timed row joins its candidate's rows and the best so far; its open session is kept (the caller
 * made room for it) while a second timing may want it.
 */
export const record = <T extends string, R extends MicroFit>(
  s: TrainState<T, R>,
  c: Candidate<T>,
  row: TuneRow,
  stoppedEarly: boolean,
  open: OpenStep | null,
  peak: number | null,
): void => {
  s.byCandidate.get(c)!.push(row);
  if (stoppedEarly) s.stopped.add(row);
  else if (s.best === null || row.samplesPerSecond! > s.best.samplesPerSecond!) s.best = row;
  if (open) s.kept.keep(keyOf(row), open, peak);
};

/**
 * When a timing at m may stop (see timeTrainStep) against a reference row: when it cannot reach
 * the reference's samples/s, by 5 % when its peak is above the reference's beyond the probe's
 * resolution (peakIsLower: it cannot win a tie, which goes to the lower peak), else by 10 %.
 */
export const limitAgainst = (
  s: TrainState<string, MicroFit>,
  peak: number | null,
  m: number,
  ref: Pick<TuneRow, 'samplesPerSecond' | 'peakBytes'>,
): WinLimit => ({
  cannotWinAboveMs: stepAtGlobal(s.G, m, (s.G / ref.samplesPerSecond!) * 1000, s.update ?? null),
  margin: peak !== null && peakIsLower(ref.peakBytes, peak) ? 0.05 : 0.1,
});

export const stopNote = (times: readonly number[], l: WinLimit): string =>
  `stopped early: cannot win (its fastest of 3 steps, ${Math.min(...times).toFixed(0)} ms, is over ` +
  `${l.cannotWinAboveMs.toFixed(0)} ms + ${l.margin * 100} %` +
  `${l.margin < 0.1 ? ", and its peak is above the best's" : ''})`;

/** c's fit above `floor` (the one found ahead when there is one); null when no micro-batch fits. */
export const fitOf = async <T extends string, R extends MicroFit>(
  s: TrainState<T, R>,
  c: Candidate<T>,
  floor: number,
): Promise<R | null> => {
  if (s.fitAhead.has(c)) return s.fitAhead.get(c)!;
  try {
    return await s.o.resolveMicro(c.recompute, floor, c.offload);
  } catch (err) {
    if (!(err instanceof NoBatchFitsError)) throw err;
    return null;
  }
};
