// --try for a trainer command (soup probe --exec and soup run): the tuner's options, each candidate's
// fit and timing runs through the trainer's probe and batch-cache key; and soup run's pick of this
// session's levers and micro-batch from it.
import { lookupCacheEntry, makeCacheKey } from '@soup/batch-probe';
import type { StepsEvidence } from '@soup/cuda-probe';
import { candidatesOf, fillLevers, type TuneEntry, type TuneExecOptions } from '@soup/tune';
import { commandTuneFns } from './command-tune-fns';
import type { BatchEvent } from './resolve-batch';
import type { ProbedBatch, TrainerMicro } from './trainer-batch';
import { redactCommand, trainerCacheBase } from './trainer-files';
import { type TrainerProbeOptions, trainerKeyOf, trainerProbe, trialCommand } from './trainer-probe';

/** Options of {@link trainerTuneOptions}. */
export interface TrainerTuneOptions extends TrainerProbeOptions {
  /** The fit searches' events (each a batch-size search). */
  onEvent?: (e: BatchEvent) => void;
  /** The command as typed: {micro_batch_size}, {probe_steps} and each lever's {NAME} unfilled. */
  command: string;
  /** `NAME → values` (parseTries). */
  tries: Record<string, string[]>;
  micro: TrainerMicro;
  /** K: the timing runs take 1, 1 + K and 1 + 2K steps. */
  timeSteps: number;
  /** A candidate's cache base from its trial command (--base); absent: the command and the files it names. */
  baseOf?: ((trial: string) => string) | undefined;
  /** Refuses a candidate's trial command before its probe is made (throws, in the caller's words). */
  assertTrial?: ((trial: string) => void) | undefined;
  /** Where each fit search starts (--start); undefined: from below, the edge predicted from the peaks. */
  start: number | undefined;
  refresh: boolean;
  noCache: boolean;
  cacheExceptionsOnly: boolean;
  predict: boolean;
}

/** What the tuner needs to know of a trainer command, the cache and its own options aside. */
export type TrainerTune = Omit<TuneExecOptions, 'worldSize' | 'refresh' | 'noCache' | 'cache' | 'onEvent'> & {
  worldSize: number;
};

/**
 * The tune key's part of a trainer command (TuneExecOptions.trainer): the command fit to store, and the files every
 * candidate's trial command names and may import, by the batch cache's rule (trainerCacheBase), so an edit in the
 * trainer or in a module it imports is a new tune key as it is a new batch-cache key.
 */
export function trainerTuneKey(o: {
  command: string;
  tries: Record<string, string[]>;
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** How its runs show their steps: a choice measured without it may be one it would have refused. */
  steps?: StepsEvidence | undefined;
}): NonNullable<TuneExecOptions['trainer']> {
  const files: Record<string, string> = {};
  let unknown: string | null = null;
  for (const values of candidatesOf(o.tries)) {
    const trial = trialCommand(fillLevers(o.command, values)).replaceAll('{probe_steps}', '1');
    const b = trainerCacheBase(trial, { cwd: o.cwd, env: o.env });
    Object.assign(files, b.files);
    unknown ??= b.unknown;
  }
  const steps = [
    ...(o.steps?.pattern !== undefined ? [`--steps-pattern ${o.steps.pattern}`] : []),
    ...(o.steps?.file !== undefined ? [`--steps-file ${o.steps.file}`] : []),
  ];
  return { command: [redactCommand(o.command), ...steps].join(' | '), files, unknown };
}

/** The tuner's options for a trainer command's levers at G: its fit (the micro-batch search) and time runs. */
export function trainerTuneOptions(o: TrainerTuneOptions): TrainerTune {
  const { micro } = o;
  return {
    command: o.command,
    trainer: trainerTuneKey(o),
    tries: o.tries,
    globalBatchSize: micro.globalBatchSize,
    worldSize: micro.worldSize,
    timeSteps: o.timeSteps,
    budgetBytes: o.budgetBytes,
    gpuName: o.identity.gpuName,
    gpuMemoryGb: o.identity.gpuMemoryGb,
    ...commandTuneFns({
      env: o.env,
      cwd: o.cwd,
      signal: o.signal,
      ...(o.onEvent ? { onEvent: o.onEvent } : {}),
      micro: { ...micro, perRank: micro.globalBatchSize / micro.worldSize, command: trialCommand },
      execProbe: (command) => {
        o.assertTrial?.(command);
        return trainerProbe(command, { ...o, base: o.baseOf?.(command) });
      },
      keyOf: (base) => trainerKeyOf(base, o),
      budgetBytes: o.budgetBytes,
      start: o.start,
      refresh: o.refresh,
      noCache: o.noCache,
      cacheExceptionsOnly: o.cacheExceptionsOnly,
      predict: o.predict,
    }),
  };
}

/** Options of {@link tuneTrainerBatch}. */
export interface TuneTrainerBatchOptions extends TrainerTuneOptions {
  /** Runs the tuner (the caller shows its lines and table): the tune cache first unless `refresh`. */
  tune(options: TrainerTune & { refresh: boolean; noCache: boolean }): Promise<{
    entry: TuneEntry;
    source: 'cache' | 'measured';
  }>;
  /**
   * The tune cache's choice is above the batch cache's answer for it (lowered after an out-of-memory), measured again;
   * `line` says so.
   */
  onStale?: (e: { microBatchSize: number; batchCacheSize: number; line: string }) => void;
}

/** soup run --try: this session's levers and micro-batch, the fastest at G (the tune cache first). */
export async function tuneTrainerBatch(o: TuneTrainerBatchOptions): Promise<ProbedBatch> {
  const options = trainerTuneOptions(o);
  const perRank = o.micro.globalBatchSize / o.micro.worldSize;
  const tune = (refresh: boolean) => o.tune({ ...options, refresh, noCache: o.noCache });
  let { entry, source } = await tune(o.refresh);
  // The batch-cache key of the chosen candidate: the key its fit search used.
  const chosenKey = (e: TuneEntry) => {
    const trial = trialCommand(fillLevers(o.command, e.rows[e.chosen]!.values)).replaceAll('{probe_steps}', '1');
    return trainerKeyOf(trainerCacheBase(trial, { cwd: o.cwd, env: o.env, base: o.baseOf?.(trial) }).base, o);
  };
  // A remembered choice whose micro-batch a mid-run out-of-memory has since lowered in the batch
  // cache is stale: measure again (the fit then reads the lowered entry).
  if (source === 'cache' && !o.noCache) {
    const m = entry.rows[entry.chosen]!.microBatchSize!;
    const lowered = await lookupCacheEntry({
      key: makeCacheKey(chosenKey(entry)),
      budgetBytes: o.budgetBytes,
      ceiling: perRank,
      env: o.env,
      cwd: o.cwd,
    });
    if (lowered.hit && lowered.batchSize < m) {
      o.onStale?.({
        microBatchSize: m,
        batchCacheSize: lowered.batchSize,
        line:
          `the tune cache's choice (micro-batch ${m}) is above the batch cache's answer for it (${lowered.batchSize}` +
          `, lowered after an out-of-memory): measuring again`,
      });
      ({ entry, source } = await tune(true));
    }
  }
  const row = entry.rows[entry.chosen]!;
  // The chosen candidate's batch-cache entry, lowered if this session's trainer dies out of memory.
  const key = chosenKey(entry);
  return {
    batchSize: row.microBatchSize!,
    source: source === 'cache' ? 'tune-cache' : 'tune',
    key,
    cacheKey: makeCacheKey(key),
    budgetBytes: o.budgetBytes,
    levers: row.values,
  };
}
