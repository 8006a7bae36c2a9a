// The tuner's one entry point. Candidates (one value per lever) are each fitted (the largest
// micro-batch m that fits G / N) and timed at m by injected functions; a timing may stop early when
// it cannot win against the best so far, and then does not compete. The most samples per second at
// G wins; a tie within the noise that the lower peak would take from a faster row is timed again
// first (settle-tie). The choice is remembered in the tune cache. A search that walks several
// micro-batches of a candidate, or times candidates side by side, gives its rows instead (`search`).
import type { CacheLocationOptions } from '@soup/batch-probe';
import type { ConfigurationChoice } from './choose-configuration';
import { NothingTimedError } from './errors';
import { choiceOver, chooseSettled, tieOver, type Retime } from './settle-tie';
import { lookupTuneEntry, makeTuneKey, saveTuneEntry, type TuneEntry, type TuneRow } from './tune-cache';

/** One configuration to measure: how the table names it and its value for each lever. */
export interface TuneCandidate {
  label: string;
  values: Record<string, string>;
}

/** What a fit answers: the largest micro-batch m that fits, with its peak, or why none does. */
export type TuneFit = { batchSize: number; peakBytes: number | null } | { batchSize: null; why: string };

/** What a timing answers: the step at m and its standard error, or why the timing failed. */
export type TuneTiming =
  | {
      stepMs: number;
      /** Null: not estimated (a row stopped early has none). */
      noiseMs: number | null;
      /** It stopped because it cannot win against the best so far: it does not compete. @default false */
      stoppedEarly?: boolean;
      note?: string | null;
    }
  | { error: string };

/** What the tuner says while it runs, for a caller to print (the table is the caller's, from the rows). */
export type TuneEvent =
  /** The tuner starts measuring: what it will do. */
  | { type: 'start'; message: string }
  /** The answer comes from the tune cache (the entry is returned): where from. */
  | { type: 'cache-hit'; message: string }
  /** A step of the search worth a line (a close call run longer, a tie timed again). */
  | { type: 'note'; message: string };

/** What fit and time see: every row so far (live), the best row timed to the end, the abort signal. */
export interface TuneContext {
  rows: readonly TuneRow[];
  best: TuneRow | null;
  signal?: AbortSignal;
}

/**
 * How a tie that the lower peak would take from a faster row is timed again: `retime` times the two
 * side by side and their ratio decides (each pair once, at most `maxPairs`; beyond, the faster
 * stands); `longer` gives both a longer timing, revising their rows in place, at most `rounds`
 * times, after which the choice stands as measured.
 */
export type TieAgain =
  | { retime: Retime; maxPairs?: number }
  | { longer(lower: TuneRow, faster: TuneRow, round: number): Promise<void>; rounds: number };

/** The rows of a search that is its own (several micro-batches a candidate, candidates side by side). */
export interface TuneSearch {
  rows: TuneRow[];
  /** Indices into `rows` of those stopped early: they do not compete. */
  excluded: ReadonlySet<number>;
  again?: TieAgain;
  /** Pairs (indices) first timed side by side: a tie between them stands. */
  sideBySide?: [number, number][];
  /** Pairs (indices) already timed again: not timed again, counted in `maxPairs`. */
  retimed?: [number, number][];
  /** Called once the choice is made, even when it failed (warm sessions released). */
  release?(): Promise<void>;
}

/** The tune cache's part: the key (beside G and N) and where the file is. */
export interface TuneCacheOptions {
  key: {
    command: string;
    tries: Record<string, string[]>;
    budgetBytes: number | null;
    gpuName: string;
    gpuMemoryGb: number;
    /** K of the timing runs (a trainer command's). */
    timeSteps?: number;
    /** The hashes of the trainer's files and sources (see TuneExecOptions.trainer). */
    files?: Record<string, string>;
  };
  location?: CacheLocationOptions;
  /** Look the key up first. @default true */
  read?: boolean;
  /** Save the measured entry. @default true */
  write?: boolean;
  /** The cache-hit line. @default "from the tune cache (measured …)" */
  hitMessage?(hit: TuneEntry): string;
}

export interface TuneOptions<C extends TuneCandidate, F extends TuneFit> {
  /** In order: with `order: 'as-given'` each is fitted and then timed before the next. */
  candidates: readonly C[];
  globalBatchSize: number;
  /** @default 1 */
  worldSize?: number;
  /** m for a candidate (the largest that fits G / N), or why none fits. */
  fit?(candidate: C, ctx: TuneContext): Promise<F>;
  /** The candidate's step at its row's m (`row.microBatchSize`); may stop early against `ctx.best`. */
  time?(candidate: C, row: TuneRow, fit: Extract<F, { batchSize: number }>, ctx: TuneContext): Promise<TuneTiming>;
  /** Instead of fit and time: a search that gives its rows (soup's own step: tuneTrain). */
  search?(ctx: { signal?: AbortSignal }): Promise<TuneSearch>;
  /**
   * 'smallest-m-first': every candidate fitted first, then timed smallest m first (the shortest
   * timings first, so a larger one that cannot win stops early). @default 'as-given'
   */
  order?: 'as-given' | 'smallest-m-first';
  /** How a tie is timed again (fit and time; a search gives its own). None: decided as measured. */
  again?: TieAgain;
  /** What the entry records beside the rows. */
  about: Pick<TuneEntry, 'command' | 'timeSteps' | 'budgetBytes' | 'gpuName' | 'gpuMemoryGb' | 'files'>;
  /** The clock the step times were measured by, as a sentence, read once timing is over. */
  clock?(): string | undefined;
  /** The tune cache; absent: neither read nor written. */
  cache?: TuneCacheOptions;
  /** The `start` line, said before measuring. */
  startMessage?: string;
  onEvent?: (event: TuneEvent) => void;
  /** Aborts between fits and timings: tune() throws the signal's reason. */
  signal?: AbortSignal;
  /** The error when nothing could be timed. @default NothingTimedError naming each row's note */
  nothingTimed?(rows: readonly TuneRow[]): Error;
}

/** What tune() found. */
export interface TuneResult {
  /** Index into `rows` of the choice. */
  choice: number;
  rows: TuneRow[];
  reason: string;
  /** What the step times were measured by (null: not said). */
  clock: string | null;
  /** What the measuring took (0 ms and no calls from the cache). */
  cost: { ms: number; fits: number; timings: number };
  entry: TuneEntry;
  source: 'cache' | 'measured';
  key: string;
  /** The tune cache file written (null: from the cache, or not written). */
  cachePath: string | null;
}

/** The choice's reason, naming the rows that stopped early (they lost by a margin before a full estimate). */
export function withEarlyStops(reason: string, rows: readonly TuneRow[]): string {
  const early = rows
    .filter((r) => r.note?.startsWith('stopped early'))
    .map((r) => (r.microBatchSize === null ? r.label : `${r.label} at ${r.microBatchSize}`));
  return early.length === 0 ? reason : `${reason}; stopped early, since they could not win: ${early.join(', ')}`;
}

/** `values` as a label: `NAME=v, …`. */
export const labelOf = (values: Record<string, string>): string =>
  Object.entries(values)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');

/**
 * Finds the fastest candidate that fits; see the file comment and the README. Throws the signal's
 * reason when aborted, and `nothingTimed` (NothingTimedError) when no candidate could be timed.
 */
export async function tune<C extends TuneCandidate, F extends TuneFit>(o: TuneOptions<C, F>): Promise<TuneResult> {
  const G = o.globalBatchSize;
  const N = o.worldSize ?? 1;
  const key = o.cache ? makeTuneKey({ ...o.cache.key, globalBatchSize: G, worldSize: N }) : '';
  const location = o.cache?.location ?? {};
  o.signal?.throwIfAborted();
  if (o.cache && o.cache.read !== false) {
    const hit = lookupTuneEntry(key, location);
    if (hit) {
      o.onEvent?.({
        type: 'cache-hit',
        message: o.cache.hitMessage?.(hit) ?? `from the tune cache (measured ${hit.savedAt.replace(/\.\d+Z$/, 'Z')})`,
      });
      const cost = { ms: 0, fits: 0, timings: 0 };
      const { chosen, rows, reason } = hit;
      const clock = hit.timedBy ?? null;
      return { choice: chosen, rows, reason, clock, cost, entry: hit, source: 'cache', key, cachePath: null };
    }
  }
  if (o.startMessage !== undefined) o.onEvent?.({ type: 'start', message: o.startMessage });
  const t0 = performance.now();
  const cost = { ms: 0, fits: 0, timings: 0 };
  const found = o.search ? await o.search({ ...(o.signal ? { signal: o.signal } : {}) }) : await fitAndTime(o, cost);
  let settled: { choice: ConfigurationChoice; rows: TuneRow[] };
  try {
    o.signal?.throwIfAborted();
    settled = await settle(found, G, o.signal);
  } finally {
    await found.release?.();
  }
  const { choice, rows } = settled;
  if (choice.chosen === null)
    throw (
      o.nothingTimed?.(rows) ??
      new NothingTimedError(
        `no configuration could be timed: ${rows.map((r) => `${r.label}: ${r.note ?? 'not timed'}`).join('; ')}`,
      )
    );
  const clock = o.clock?.() ?? null;
  const entry: TuneEntry = {
    chosen: choice.chosen,
    reason: withEarlyStops(choice.reason, rows),
    rows,
    globalBatchSize: G,
    worldSize: N,
    ...o.about,
    ...(clock === null ? {} : { timedBy: clock }),
    savedAt: new Date().toISOString(),
  };
  cost.ms = performance.now() - t0;
  const write = o.cache !== undefined && o.cache.write !== false;
  const cachePath = write ? await saveTuneEntry(key, entry, location) : null;
  return { choice: entry.chosen, rows, reason: entry.reason, clock, cost, entry, source: 'measured', key, cachePath };
}

/** The per-candidate search: each candidate fitted, then timed at its m against the best so far. */
async function fitAndTime<C extends TuneCandidate, F extends TuneFit>(
  o: TuneOptions<C, F>,
  cost: { fits: number; timings: number },
): Promise<TuneSearch> {
  if (!o.fit || !o.time) throw new TypeError('tune(): give fit and time, or search');
  const { fit: fitOf, time: timeOf } = o;
  const G = o.globalBatchSize;
  const perRank = G / (o.worldSize ?? 1);
  const rows: TuneRow[] = [];
  const stopped = new Set<TuneRow>();
  const fits = new Map<TuneRow, { c: C; f: Extract<F, { batchSize: number }> }>();
  /** The row with the most samples/s among those timed to the end. */
  const best = (): TuneRow | null =>
    rows.reduce<TuneRow | null>(
      (b, r) =>
        r.samplesPerSecond === null || stopped.has(r) || (b !== null && r.samplesPerSecond <= b.samplesPerSecond!)
          ? b
          : r,
      null,
    );
  const ctx = (): TuneContext => ({ rows, best: best(), ...(o.signal ? { signal: o.signal } : {}) });
  const fitRow = async (c: C): Promise<TuneRow> => {
    o.signal?.throwIfAborted();
    cost.fits++;
    const f = await fitOf(c, ctx());
    const row: TuneRow = {
      label: c.label,
      values: c.values,
      microBatchSize: f.batchSize,
      accumulation: f.batchSize === null ? null : perRank / f.batchSize,
      peakBytes: f.batchSize === null ? null : (f as { peakBytes: number | null }).peakBytes,
      stepMs: null,
      noiseMs: null,
      samplesPerSecond: null,
      note: f.batchSize === null ? (f as { why: string }).why : null,
    };
    rows.push(row);
    if (f.batchSize !== null) fits.set(row, { c, f: f as Extract<F, { batchSize: number }> });
    return row;
  };
  const timeRow = async (row: TuneRow): Promise<void> => {
    const at = fits.get(row);
    if (!at) return;
    o.signal?.throwIfAborted();
    cost.timings++;
    const t = await timeOf(at.c, row, at.f, ctx());
    if ('error' in t) {
      Object.assign(row, { stepMs: null, noiseMs: null, samplesPerSecond: null, note: t.error });
      return;
    }
    row.stepMs = t.stepMs;
    row.noiseMs = t.noiseMs;
    row.samplesPerSecond = t.stepMs > 0 ? G / ((row.accumulation! * t.stepMs) / 1000) : null;
    row.note = t.note ?? row.note;
    if (t.stoppedEarly) stopped.add(row);
  };
  if (o.order === 'smallest-m-first') {
    for (const c of o.candidates) await fitRow(c);
    const order = [...fits.keys()].sort((a, b) => a.microBatchSize! - b.microBatchSize!);
    for (const row of order) await timeRow(row);
  } else for (const c of o.candidates) await timeRow(await fitRow(c));
  const excluded = new Set(rows.flatMap((r, i) => (stopped.has(r) ? [i] : [])));
  return { rows, excluded, ...(o.again ? { again: o.again } : {}) };
}

/** The choice over a search's rows, each tie that the lower peak would take from a faster row timed again first. */
async function settle(
  s: TuneSearch,
  G: number,
  signal: AbortSignal | undefined,
): Promise<{ choice: ConfigurationChoice; rows: TuneRow[] }> {
  const again = s.again;
  if (again === undefined) return { choice: choiceOver(s.rows, G, s.excluded), rows: s.rows };
  if ('retime' in again)
    return chooseSettled({
      rows: s.rows,
      globalBatchSize: G,
      excluded: s.excluded,
      retime: async (a, b) => {
        signal?.throwIfAborted();
        return again.retime(a, b);
      },
      ...(again.maxPairs !== undefined ? { maxRetimes: again.maxPairs } : {}),
      ...(s.retimed ? { retimed: s.retimed } : {}),
      ...(s.sideBySide ? { sideBySide: s.sideBySide } : {}),
    });
  // Longer timings: the rows are revised in place; a pair still tied after `rounds` goes as measured.
  for (let round = 0; round < again.rounds; round++) {
    const pair = tieOver(s.rows, G, s.excluded);
    if (pair === null) break;
    signal?.throwIfAborted();
    await again.longer(s.rows[pair[0]]!, s.rows[pair[1]]!, round);
  }
  return { choice: choiceOver(s.rows, G, s.excluded), rows: s.rows };
}
