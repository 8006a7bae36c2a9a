// soup plan's answer: what soup train would do on this device, measured (prepareRun); or, for a
// config soup train would refuse, the problems and what is known without a probe.
import { ConfigError, type SoupConfig } from '@soup/config';
import { deviceIdentity } from '@soup/cuda-probe';
import type { TuneEntry } from '@soup/tune';
import { existsSync, rmdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { assertTrainable, offloadChoicesOf, offloadIssues, resolveTier, type TierPlan } from './config-plan';
import { type PreparedRun, type PrepareRunOptions, prepareRun } from './prepare-run';
import type { TrialView } from './resolve-batch';
import { pushEveryOf } from './push-every-of';

type Training = SoupConfig['training'];

/** soup plan's result (its `--json`). */
export interface PlanReport {
  config: string;
  device: { spec: string; name: string; memory_gb: number };
  model: { base: string; n_layers: number; d_model: number; n_heads: number; max_length: number };
  batch_size: number;
  micro_batch_size: number | null;
  grad_accum: number | null;
  batch_source: string | null;
  /**
   * exact (a larger size failed), capped (the search's ceiling: a larger size may fit), unproven, or null (not
   * searched).
   */
  batch_bound: PreparedRun['bound'];
  batch_ceiling: number | null;
  cache_key: string | null;
  grad_ckpt: { setting: Training['gradientCheckpointing']; description: string; recompute: string[] };
  tune?: TuneEntry;
  offload: {
    setting?: Training['activationOffloading'];
    /** The offload this run applies (auto: the measured choice); a refused config: the setting. */
    target: Training['activationOffloading'];
    save_dir: string | null;
    execution: 'segmented' | 'fused' | null;
    errors: string[];
    warnings: string[];
  };
  peak_bytes: number | null;
  budget_bytes: number | null;
  fits: boolean | null;
  tokens_per_step: number;
  steps: number;
  push_every_steps: number;
  /** What soup train would refuse the config for, as `path: message` (nothing was probed then). */
  problems: string[];
  trials: TrialView[];
}

/** Options of {@link planRun}: prepareRun's, and the config's file as shown. */
export interface PlanRunOptions extends Omit<PrepareRunOptions, 'measure' | 'microBatchSize'> {
  file: string;
}

/** The report; the prepared run (null: refused, nothing probed) and the checkpointing tier. */
export interface PlanRun {
  report: PlanReport;
  prepared: PreparedRun | null;
  tier: TierPlan;
}

/** What soup train would do with `config` on this device: every check first, then one measured preparation. */
export async function planRun(o: PlanRunOptions): Promise<PlanRun> {
  const { file, ...prepare } = o;
  const { config, cwd } = o;
  const issues = offloadIssues(config, cwd);
  const offload = { errors: issues.errors.map((i) => i.message), warnings: issues.warnings.map((i) => i.message) };
  let blocking: string[] = [];
  try {
    assertTrainable(config, file, cwd);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    blocking = err.issues.map((i) => `${i.path}: ${i.message}`);
  }
  // Everything that can be checked without a probe is checked first: a config train would refuse
  // is reported at once, before any step runs.
  if (blocking.length > 0) return refused(config, file, blocking, offload);
  // Disk offload's probes and timing make its scratch folder (and the output folder above it):
  // soup plan trains nothing, so what it created and left empty goes again.
  const scratch = offloadChoicesOf(config, cwd).find((c) => c?.saveDir)?.saveDir ?? null;
  const created = scratch === null ? [] : missingDirs(scratch, cwd);
  let p: PreparedRun;
  try {
    p = await prepareRun({ ...prepare, measure: true });
  } finally {
    for (const d of created) removeEmptyDir(d);
  }
  const m = p.measured;
  const setting = config.training.activationOffloading;
  const report: PlanReport = {
    ...head(config, file, p.identity),
    batch_size: p.globalBatchSize,
    micro_batch_size: p.microBatchSize,
    grad_accum: p.accumulation,
    batch_source: p.batchSource,
    batch_bound: p.bound,
    batch_ceiling: p.ceiling,
    cache_key: p.cacheKey,
    grad_ckpt: {
      setting: config.training.gradientCheckpointing,
      description: p.tier.description,
      recompute: p.tier.recompute,
    },
    ...(p.tuned ? { tune: p.tuned } : {}),
    offload: {
      setting,
      target: p.offload?.target ?? null,
      save_dir: p.offload?.saveDir ?? null,
      execution: p.offload ? 'segmented' : 'fused',
      ...offload,
    },
    peak_bytes: m?.peak_bytes ?? null,
    budget_bytes: m?.budget_bytes ?? null,
    fits: m ? m.result === 'fit' : null,
    ...steps(config, p.globalBatchSize),
    problems: blocking,
    trials: p.trials,
  };
  return { report, prepared: p, tier: p.tier };
}

/** A config soup train would refuse: the problems and what is known, no probe. */
async function refused(
  config: SoupConfig,
  file: string,
  blocking: string[],
  offload: { errors: string[]; warnings: string[] },
): Promise<PlanRun> {
  const identity = await deviceIdentity({ device: config.device.kind, deviceId: config.device.id });
  const tier = resolveTier(config, identity.device === 'cuda' ? identity.gpuMemoryGb : null);
  const batch = config.training.batchSize;
  const micro = config.training.microBatchSize === 'auto' ? null : config.training.microBatchSize;
  const report: PlanReport = {
    ...head(config, file, identity),
    batch_size: batch,
    micro_batch_size: micro,
    grad_accum: micro === null ? null : batch / micro,
    batch_source: micro === null ? null : 'config',
    batch_bound: null,
    batch_ceiling: null,
    cache_key: null,
    grad_ckpt: {
      setting: config.training.gradientCheckpointing,
      description: tier.description,
      recompute: tier.recompute,
    },
    offload: { target: config.training.activationOffloading, save_dir: null, execution: null, ...offload },
    peak_bytes: null,
    budget_bytes: null,
    fits: null,
    ...steps(config, batch),
    problems: blocking,
    trials: [],
  };
  return { report, prepared: null, tier };
}

function head(
  config: SoupConfig,
  file: string,
  identity: { gpuName: string; gpuMemoryGb: number },
): Pick<PlanReport, 'config' | 'device' | 'model'> {
  return {
    config: file,
    device: { spec: config.device.spec, name: identity.gpuName, memory_gb: identity.gpuMemoryGb },
    model: {
      base: config.base,
      n_layers: config.model.nLayers,
      d_model: config.model.dModel,
      n_heads: config.model.nHeads,
      max_length: config.data.maxLength,
    },
  };
}

/** Tokens per optimizer step, the horizon, and how often a checkpoint is pushed (a quarter of it by default). */
function steps(config: SoupConfig, batch: number): Pick<PlanReport, 'tokens_per_step' | 'steps' | 'push_every_steps'> {
  const horizon = config.training.steps;
  return {
    tokens_per_step: batch * config.data.maxLength,
    steps: horizon,
    push_every_steps: pushEveryOf(config),
  };
}

/** The folders on the way to `dir` (itself first) that do not exist yet, below `root`. */
function missingDirs(dir: string, root: string): string[] {
  const out: string[] = [];
  for (let d = dir; !existsSync(d) && d.startsWith(`${root}/`); d = dirname(d)) out.push(d);
  return out;
}

function removeEmptyDir(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // not empty (someone else's files) or already gone: leave it
  }
}
