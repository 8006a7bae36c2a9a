// soup run's batch size for a trainer command (--batch-size auto, or the micro-batch of a global
// batch): the batch cache first, else one trial of the trainer's one-step command per candidate.
import {
  type CacheKeyFields,
  type CacheLocationOptions,
  formatMicroBatch,
  type LowerCacheEntryResult,
  lowerCacheEntry,
} from '@soup/batch-probe';
import { PlanUsageError } from './errors';
import { noFitAdvice } from './no-fit-advice';
import { type BatchEvent, type BatchResolution, resolveBatch } from './resolve-batch';
import { type TrainerProbeOptions, trainerProbe, trialCommand } from './trainer-probe';

/** The probe's answer and the cache key it is filed under (to lower it after a mid-run out-of-memory). */
export interface ProbedBatch {
  batchSize: number;
  source: 'static' | 'cache' | 'probe' | 'tune' | 'tune-cache';
  key: CacheKeyFields;
  /** --try: the trainer's levers this session's tuner chose. */
  levers?: Record<string, string>;
  cacheKey: string;
  budgetBytes: number | null;
}

/** A global batch G shared by `worldSize` ranks: the answer is a micro-batch, a divisor of G / worldSize. */
export interface TrainerMicro {
  globalBatchSize: number;
  worldSize: number;
  /** Fraction of the budget a trial's measured peak must leave free. */
  headroom: number;
}

/** Options of {@link resolveTrainerBatch}. */
export interface ResolveTrainerBatchOptions extends TrainerProbeOptions {
  /** The search's events (the caller draws them). */
  onEvent?: (e: BatchEvent) => void;
  /** The one-step command as typed: {batch_size}, or {micro_batch_size} and {grad_accum} with `micro`. */
  command: string;
  /** The cache base instead of the command and the files it names (--base). */
  base?: string | undefined;
  micro?: TrainerMicro | undefined;
  /** First size tried. @default G / worldSize with `micro`, else 8 */
  start?: number | undefined;
  /** Largest size tried. @default G / worldSize with `micro`, else 4 × start */
  ceiling?: number | undefined;
  refresh: boolean;
  noCache: boolean;
  cacheExceptionsOnly: boolean;
  predict: boolean;
}

/**
 * The batch size (or micro-batch) of a trainer command: the answer, its key, and the search that found it. A command
 * without {batch_size} (or {micro_batch_size} with `micro`) is refused (PlanUsageError, naming soup run's `--probe`).
 */
export async function resolveTrainerBatch(
  o: ResolveTrainerBatchOptions,
): Promise<{ probed: ProbedBatch; resolution: BatchResolution }> {
  const { micro } = o;
  const trial = micro ? trialCommand(o.command) : o.command;
  if (!trial.includes('{batch_size}'))
    throw new PlanUsageError(
      '--probe needs {batch_size} in the command, e.g. --probe "python train.py --max_steps 1 ' +
        '--per_device_train_batch_size {batch_size}"',
    );
  const t = trainerProbe(trial, o);
  const r = await resolveBatch({
    env: o.env,
    cwd: o.cwd,
    signal: o.signal,
    ...(o.onEvent ? { onEvent: o.onEvent } : {}),
    probe: t.probe,
    budgetBytes: o.budgetBytes,
    refresh: o.refresh,
    saveExceptionsOnly: o.cacheExceptionsOnly,
    predict: o.predict,
    advice: noFitAdvice({
      mode: 'exec',
      device: o.identity.device === 'cuda' ? 'cuda' : 'cpu',
      budgetBytes: o.budgetBytes,
      budgetFrom: o.budgetBytes !== null ? 'flag' : null,
      maxLength: o.maxLength,
    }),
    ...(micro ? { globalBatchSize: micro.globalBatchSize, worldSize: micro.worldSize, headroom: micro.headroom } : {}),
    key: t.key,
    files: t.files,
    keyUnknown: t.keyUnknown,
    start: o.start ?? (micro ? micro.globalBatchSize / micro.worldSize : 8),
    ...(o.ceiling !== undefined ? { ceiling: o.ceiling } : {}),
    noCache: o.noCache,
  });
  const probed = {
    batchSize: r.batchSize,
    source: r.source,
    key: t.key,
    cacheKey: r.cacheKey,
    budgetBytes: o.budgetBytes,
  };
  return { probed, resolution: r };
}

/**
 * After a mid-run out-of-memory stepped the micro-batch down (`from` failed at `step`, `to` runs on): the probed
 * answer's cache entry lowered to `to`, its note saying why.
 */
export async function lowerProbedBatch(
  o: CacheLocationOptions & {
    probed: ProbedBatch;
    globalBatchSize: number;
    worldSize: number;
    step: number | null;
    from: number;
    to: number;
  },
): Promise<LowerCacheEntryResult & { note: string }> {
  const { probed, globalBatchSize: G, worldSize: N } = o;
  const shape = (m: number): string => formatMicroBatch({ microBatchSize: m, accumulation: G / N / m, worldSize: N });
  const note =
    `mid-run OOM at step ${o.step ?? 'unknown'} (micro ${shape(o.from)} failed; stepped down to ` + `${shape(o.to)})`;
  const r = await lowerCacheEntry({
    ...probed.key,
    key: probed.cacheKey,
    env: o.env,
    cwd: o.cwd,
    failedBatchSize: o.from,
    batchSize: o.to,
    budgetBytes: probed.budgetBytes,
    note,
  });
  return { ...r, note };
}
