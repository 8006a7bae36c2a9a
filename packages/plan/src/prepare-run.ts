// The device, tier, budget and batch size of a soup.yaml run: shared by `soup plan` and `soup train`.
// It prints nothing: each step is an event, and the caller decides what a user sees.
import { createTrainStepProbe, deviceIdentity, type ChildProbeFn, type DeviceIdentity } from '@soup/cuda-probe';
import { formatBytes, largestDivisorAtMost } from '@soup/batch-probe';
import type { TuneEntry } from '@soup/tune';
import { TRAIN_TIERS } from '@soup/tune';
import type { Granularity } from '@soup/grad-ckpt';
import { moduleNames, type GptSpec } from '@soup/onnx-train';
import type { SoupConfig } from '@soup/config';
import { planBudgetTier, type BudgetTierPlan } from './budget-tier';
import {
  cacheBaseOf,
  gptSpecOf,
  offloadChoicesOf,
  offloadOf,
  resolveTier,
  type OffloadPlan,
  type TierPlan,
} from './config-plan';
import { describeResolution } from './describe-resolution';
import { microBatchOneWarning } from './micro-batch-one-warning';
import { noFitAdvice } from './no-fit-advice';
import { resolveBatch, type BatchEvent, type BatchResolution, type PlanIo, type TrialView } from './resolve-batch';
import { describeChoice, tuneTrain, type TrainTuneEvent } from './tune-train';

/**
 * The peak of this process through the tuner's timed steps, and whether its high-water mark was reset after it
 * (what the caller's `resetPeak` found).
 */
export interface TunePeak {
  peakBytes: number | null;
  reset: boolean;
  residentAtResetBytes: number | null;
}

/** What {@link prepareRun} reports, in order: the searches' and the tuner's events, and its own steps. */
export type PrepareEvent =
  | BatchEvent
  | TrainTuneEvent
  /** The micro-batch search begins (`micro_batch_size: auto`, probed). */
  | {
      type: 'probe-start';
      globalBatchSize: number;
      /** The divisor of G the search starts from. */
      start: number;
      /** The checkpointing the search probes with (its tier's description). */
      checkpointing: string;
      offloadTarget: 'cpu' | 'disk' | null;
      /** Fraction of the budget a fit must leave free. */
      headroom: number;
      /** `micro_batch_size: auto, the cache first, else one real training step per divisor of …`. */
      line: string;
    }
  /** The micro-batch search's answer. */
  | {
      type: 'micro-batch';
      resolution: BatchResolution;
      globalBatchSize: number;
      bound: PreparedRun['bound'];
      /** The answer as @soup/plan's describeResolution says it. */
      line: string;
      /** A probed micro-batch of 1 where G has larger divisors (microBatchOneWarning); null otherwise. */
      warning: string | null;
    }
  /** `gradient_checkpointing: budget` measures the steps it chooses from (`line`: what, at which size). */
  | { type: 'budget-start'; batchSize: number; memoryBudgetBytes: number; line: string }
  /** One of those steps (`line`: `  <what>: peak <bytes>`, indented under budget-start's). */
  | { type: 'budget-measure'; what: string; peakBytes: number; line: string }
  /** One step measured at the chosen size (`measure`). */
  | { type: 'measured'; trial: TrialView };

/** Options of {@link prepareRun}. */
export interface PrepareRunOptions extends PlanIo {
  config: SoupConfig;
  /** Called with every step (the caller shows it). */
  onEvent?: (e: PrepareEvent) => void;
  /**
   * After the tuner timed steps in this process: reads its peak and resets the high-water mark, so that what
   * follows is measured on its own. @default none (tuneMemory stays null)
   */
  resetPeak?: () => TunePeak;
  /** Probe even when the cache has an answer. */
  noCache: boolean;
  /** Use this micro-batch (e.g. after an out-of-memory step-down) instead of resolving one. */
  microBatchSize?: number;
  /** Predictive search (the default in every command); false: plain bisection (--no-predict). @default true */
  predict?: boolean;
  /** Where training.memory_budget came from, for the "nothing fits" advice. @default 'config' when set */
  budgetFrom?: 'flag' | 'config' | null;
  /** Measure one step at the chosen size when nothing was measured yet (soup plan). */
  measure?: boolean;
}

/** Where the micro-batch came from. */
export type BatchSource = 'config' | 'static' | 'cache' | 'probe' | 'checkpoint';

/** A run made concrete for this device. */
export interface PreparedRun {
  identity: DeviceIdentity;
  spec: GptSpec;
  tier: TierPlan;
  /** The activation offload every probe step and the run use (segmented execution), or null (fused). */
  offload: OffloadPlan | null;
  budgetTier: BudgetTierPlan | null;
  /** The budget a probe step is held to (null: what the device can reach, decided per trial). */
  budgetBytes: number | null;
  /** G: sequences per optimizer step (`training.batch_size`). */
  globalBatchSize: number;
  /** m: sequences per forward/backward on this device, a divisor of G. */
  microBatchSize: number;
  /** a = G / m. */
  accumulation: number;
  /** Where m came from. */
  batchSource: BatchSource;
  cacheKey: string | null;
  trials: TrialView[];
  /** The step measured at the chosen batch size and recompute set, when one was. */
  measured: TrialView | null;
  /**
   * exact: a larger size was tried and failed; capped: the answer is the ceiling of the search (a larger size
   * may fit too, it was not tried); null: not searched (config, static, checkpoint) or unknown (a cache entry without
   * provenance).
   */
  bound: 'exact' | 'capped' | 'unproven' | null;
  /** The largest micro-batch the search could try (G), when it searched. */
  ceiling: number | null;
  /** `gradient_checkpointing: auto` / `activation_offloading: auto`: the measured choice (its table), else null. */
  tuned: TuneEntry | null;
  /** `activation_offloading: auto`: what was chosen and why, one line (null: not auto, or not measured). */
  offloadChoice: string | null;
  /**
   * The tuner timed steps in this process: its peak (VmHWM), and whether the high-water mark was
   * reset after it (so soup train's session peak is the run's own). Null when nothing was timed here.
   */
  tuneMemory: TunePeak | null;
}

/** Resolves device, tier and batch size, probing (each trial shown) when the config says auto. */
export async function prepareRun(opts: PrepareRunOptions): Promise<PreparedRun> {
  // Over 150 lines: device, tier, batch source and probe are decided in order, each from the ones before.
  const { config } = opts;
  const io: PlanIo = { env: opts.env, cwd: opts.cwd, signal: opts.signal };
  const emit = opts.onEvent ?? ((): void => {});
  const identity = await deviceIdentity({ device: config.device.kind, deviceId: config.device.id, env: io.env });
  const gpuMemoryGb = identity.device === 'cuda' ? identity.gpuMemoryGb : null;
  const spec = gptSpecOf(config);
  const tier = resolveTier(config, gpuMemoryGb);
  const budgetBytes = config.training.memoryBudgetBytes;
  // Probe what will train: with offload, onnx-train's segmented step through the same store.
  let offload = offloadOf(config, io.cwd);
  const probeWith = (recompute: string[], off: OffloadPlan | null = offload): ChildProbeFn =>
    createTrainStepProbe({
      device: config.device.kind,
      deviceId: config.device.id,
      spec,
      plan: recompute,
      ...(off
        ? {
            offload: {
              target: off.target,
              ...(off.saveDir ? { saveDir: off.saveDir } : {}),
            },
          }
        : {}),
      signal: io.signal,
      env: io.env,
      cwd: io.cwd,
      ...(budgetBytes !== null ? { budgetBytes } : {}),
      ...(config.training.threads > 0 ? { intraOpNumThreads: config.training.threads } : {}),
    });
  const blocks = moduleNames({ nLayers: config.model.nLayers }).filter((n) => /^h\.\d+$/.test(n));
  // The budget tier sizes the batch with every block recomputed (the most that can fit), then
  // keeps only the recomputes that batch needs.
  const probeRecompute = tier.granularity === 'budget' ? blocks : tier.recompute;
  const globalBatchSize = config.training.batchSize;
  const resolveMicro = (
    recompute: string[],
    floor = 0,
    off: OffloadPlan | null = offload,
    predictStop = false,
  ): Promise<BatchResolution> =>
    resolveBatch({
      globalBatchSize,
      globalBatchName: 'training.batch_size',
      ...(floor > 0 ? { floor } : {}),
      ...(predictStop ? { predictStop: { margin: 0.1 } } : {}),
      ...(config.training.memoryHeadroom > 0 ? { headroom: config.training.memoryHeadroom } : {}),
      ...io,
      onEvent: emit,
      probe: probeWith(recompute, off),
      key: {
        base: cacheBaseOf(config, recompute, off?.target ?? null),
        maxLength: config.data.maxLength,
        quantization: config.training.quantization,
        loraR: config.training.loraR,
        gpuName: identity.gpuName,
        gpuMemoryGb: identity.gpuMemoryGb,
      },
      start: config.training.staticBatchSize,
      budgetBytes,
      noCache: opts.noCache,
      strategy: config.training.autoBatchSizeStrategy,
      predict: opts.predict ?? true,
      advice: noFitAdvice({
        mode: 'config',
        device: identity.device === 'cuda' ? 'cuda' : 'cpu',
        granularity: tier.granularity,
        offloadTarget: off?.target ?? null,
        budgetBytes,
        budgetFrom: opts.budgetFrom ?? (budgetBytes !== null ? 'config' : null),
        maxLength: config.data.maxLength,
      }),
    });
  let batchSize: number;
  let batchSource: BatchSource;
  let cacheKey: string | null = null;
  let trials: TrialView[] = [];
  let measured: TrialView | null = null;
  let bound: PreparedRun['bound'] = null;
  let ceiling: number | null = null;
  let tuned: TuneEntry | null = null;
  let offloadChoice: string | null = null;
  let tuneMemory: TunePeak | null = null;
  // gradient_checkpointing: auto and activation_offloading: auto are measured choices when the
  // micro-batch is soup's to choose too (auto, probed); the budget tier sizes its own way.
  const tierAuto = config.training.gradientCheckpointing === 'auto';
  const offloadAuto = config.training.activationOffloading === 'auto';
  const measuredAuto =
    (tierAuto || offloadAuto) &&
    tier.granularity !== 'budget' &&
    opts.microBatchSize === undefined &&
    config.training.microBatchSize === 'auto' &&
    config.training.autoBatchSizeStrategy !== 'static';
  if (measuredAuto) {
    const t = await tuneTrain({
      io,
      onEvent: emit,
      config,
      spec,
      tiers: tierAuto ? TRAIN_TIERS : [tier.granularity as Granularity | null],
      offloads: offloadChoicesOf(config, io.cwd),
      budgetBytes,
      gpuName: identity.gpuName,
      gpuMemoryGb: identity.gpuMemoryGb,
      noCache: opts.noCache,
      // The tuner's searches do not try a divisor that the line through two fits puts more than 10 %
      // over the budget: its answer is a measured fit either way.
      resolveMicro: (recompute, floor, off) => resolveMicro(recompute, floor, off, true),
    });
    // Its timing sessions are released: measure them apart from what follows (soup train's session peak).
    if (t.source === 'measured' && opts.resetPeak) tuneMemory = opts.resetPeak();
    tier.granularity = t.granularity;
    tier.recompute = t.recompute;
    offload = t.offload;
    if (tierAuto) tier.description = describeChoice(t, globalBatchSize);
    if (offloadAuto) offloadChoice = describeChoice(t, globalBatchSize, 'offload');
    batchSize = t.microBatchSize;
    batchSource = t.source === 'cache' ? 'cache' : (t.resolution?.source ?? 'probe');
    cacheKey = t.resolution?.cacheKey ?? null;
    trials = t.resolution?.trials ?? [];
    measured = t.measured;
    ceiling = globalBatchSize;
    bound = t.resolution ? boundOf(t.resolution, globalBatchSize) : null;
    tuned = t.entry;
  } else if (opts.microBatchSize !== undefined) {
    batchSize = opts.microBatchSize;
    batchSource = 'checkpoint';
  } else if (config.training.microBatchSize !== 'auto') {
    batchSize = config.training.microBatchSize;
    batchSource = 'config';
  } else if (config.training.autoBatchSizeStrategy === 'static') {
    batchSize = largestDivisorAtMost(globalBatchSize, config.training.staticBatchSize) ?? 1;
    batchSource = 'static';
  } else {
    const start = largestDivisorAtMost(globalBatchSize, config.training.staticBatchSize) ?? 1;
    const checkpointing = tier.granularity === 'budget' ? 'full while sizing' : tier.description;
    const offloadTarget = offload?.target ?? null;
    const headroom = config.training.memoryHeadroom;
    emit({
      type: 'probe-start',
      globalBatchSize,
      start,
      checkpointing,
      offloadTarget,
      headroom,
      line:
        `micro_batch_size: auto, the cache first, else one real training step per divisor of batch_size ` +
        `${globalBatchSize} from ${start} (checkpointing ${checkpointing}` +
        `${offloadTarget ? `, offload ${offloadTarget}, segmented` : ''}` +
        `${headroom > 0 ? `, peak ≤ ${Math.round((1 - headroom) * 100)} % of the budget` : ''})`,
    });
    const r = await resolveMicro(probeRecompute);
    batchSize = r.batchSize;
    batchSource = r.source;
    cacheKey = r.cacheKey;
    trials = r.trials;
    // The micro-batch search tries divisors of G only: its ceiling is G itself (a = 1).
    ceiling = globalBatchSize;
    bound = boundOf(r, ceiling);
    if (tier.granularity !== 'budget') measured = r.chosen;
    const micro = { globalBatchSize, worldSize: 1 };
    const ceilingName = 'the global batch G, a = 1; a larger micro-batch is never tried';
    emit({
      type: 'micro-batch',
      resolution: r,
      globalBatchSize,
      bound,
      line: describeResolution(r, { gpuName: identity.gpuName, micro, bound, ceilingName }),
      // Only a probed 1 warns: the trials just showed the next divisor does not fit.
      warning:
        r.source === 'probe'
          ? microBatchOneWarning({ ...micro, batchSize, globalBatchName: 'training.batch_size' })
          : null,
    });
  }
  let budgetTier: BudgetTierPlan | null = null;
  if (tier.granularity === 'budget') {
    const memoryBudgetBytes = budgetBytes!;
    emit({
      type: 'budget-start',
      batchSize,
      memoryBudgetBytes,
      line: `gradient_checkpointing: budget, measuring batch ${batchSize} against ${formatBytes(memoryBudgetBytes)}`,
    });
    budgetTier = await planBudgetTier({
      probeWith,
      batchSize,
      blocks,
      memoryBudgetBytes,
      onMeasure: (what, peakBytes) =>
        emit({ type: 'budget-measure', what, peakBytes, line: `  ${what}: peak ${formatBytes(peakBytes)}` }),
    });
    tier.recompute = budgetTier.recompute;
    tier.description =
      `budget → ${budgetTier.recompute.length ? budgetTier.recompute.join(', ') : 'nothing'}` +
      ` recomputed (peak ${formatBytes(budgetTier.peakPlanBytes)} ${budgetTier.fits ? '≤' : '>'} budget ` +
      `${formatBytes(memoryBudgetBytes)}${budgetTier.fits ? '' : ': does not fit'})`;
    measured = {
      batch_size: batchSize,
      phase: 'budget',
      result: budgetTier.fits ? 'fit' : 'over-budget',
      peak_bytes: budgetTier.peakPlanBytes,
      budget_bytes: memoryBudgetBytes,
      ms: 0,
      detail: null,
    };
  }
  if (opts.measure && measured === null) {
    const o = await probeWith(tier.recompute)(batchSize);
    measured = {
      batch_size: batchSize,
      phase: 'measure',
      result: o.reason,
      peak_bytes: o.peakBytes ?? null,
      budget_bytes: o.budgetBytes ?? null,
      ms: Math.round(o.ms),
      detail: o.detail,
    };
    emit({ type: 'measured', trial: measured });
  }
  return {
    identity,
    spec,
    tier,
    offload,
    budgetTier,
    budgetBytes,
    globalBatchSize,
    microBatchSize: batchSize,
    accumulation: globalBatchSize / batchSize,
    batchSource,
    cacheKey,
    trials,
    measured,
    bound,
    ceiling,
    tuned,
    offloadChoice,
    tuneMemory,
  };
}

/** How far the micro-batch search proved its answer (see `PreparedRun.bound`); `ceiling` is G. */
function boundOf(r: BatchResolution, ceiling: number): PreparedRun['bound'] {
  if (r.source === 'cache') return r.provenance?.bound ?? null;
  return r.trials.some((t) => t.batch_size > r.batchSize && t.result !== 'fit')
    ? 'exact'
    : r.batchSize >= ceiling
      ? 'capped'
      : 'unproven';
}
