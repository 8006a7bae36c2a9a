// What `soup plan` shows and `soup train` applies: the model spec, the device, the checkpointing
// tier and the offload check, derived from a validated config.
import { checkOffloadConfig } from '@soup/offload';
import { describeTier, planCheckpoint, resolveGranularity, type Granularity } from '@soup/grad-ckpt';
import { moduleNames, selectiveToCore, type GptSpec } from '@soup/onnx-train';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { ConfigError, type ConfigIssue, type SoupConfig } from '@soup/config';

/** The onnx-train GptSpec of a config (seqLen = data.max_length). */
export function gptSpecOf(config: SoupConfig): GptSpec {
  const m = config.model;
  return {
    vocabSize: m.vocabSize,
    seqLen: config.data.maxLength,
    dModel: m.dModel,
    nHeads: m.nHeads,
    nLayers: m.nLayers,
    dFF: m.dFF,
    tieEmbeddings: m.tieEmbeddings,
  };
}

/** A resolved checkpointing tier. */
export interface TierPlan {
  /** As written in soup.yaml. */
  setting: SoupConfig['training']['gradientCheckpointing'];
  /** full / medium / selective, or null (off); `budget` until measured. */
  granularity: string | null;
  /** describeTier's words, e.g. "auto → full (VRAM 23GB)". */
  description: string;
  /** Module names recomputed in the backward (`selective`: every `h.<i>.attn.core`, as onnx-train applies it). */
  recompute: string[];
}

/** Resolves a fixed tier (not `budget`, which needs measurements: see `planBudgetTier`). */
export function resolveTier(config: SoupConfig, gpuMemoryGb: number | null): TierPlan {
  const setting = config.training.gradientCheckpointing;
  if (setting === 'budget') {
    return {
      setting,
      granularity: 'budget',
      description: describeTier({
        tier: 'budget',
        ...(config.training.memoryBudgetBytes ? { memoryBudgetBytes: config.training.memoryBudgetBytes } : {}),
      }),
      recompute: [],
    };
  }
  const granularity = resolveGranularity(setting, gpuMemoryGb);
  return {
    setting,
    granularity,
    description: describeTier(setting, gpuMemoryGb),
    recompute: recomputeOf(config, granularity),
  };
}

/** The modules a granularity recomputes in this model (null: none). */
export function recomputeOf(config: SoupConfig, granularity: Granularity | null): string[] {
  if (granularity === null) return [];
  const planned = planCheckpoint({
    moduleNames: moduleNames({ nLayers: config.model.nLayers }),
    granularity: granularity as Granularity,
  });
  // onnx-train applies selective's attention modules as attention-core recompute (see resolveRecompute).
  return granularity === 'selective' ? selectiveToCore({ moduleNames: planned }) : planned;
}

/** The offload scratch dir: the configured one, or `<output>/offload`. */
export function offloadDirOf(config: SoupConfig): string {
  return config.training.activationOffloadingDir ?? join(config.output, 'offload');
}

/**
 * The target `activation_offloading: auto` measures against no offload: host RAM where the step
 * runs on CUDA (the only device that has memory to move off), scratch files on the CPU.
 */
export function autoOffloadTarget(config: SoupConfig): 'cpu' | 'disk' {
  return config.device.kind === 'cuda' ? 'cpu' : 'disk';
}

/**
 * @soup/offload's check of `training.activation_offloading`, as config issues (errors, warnings); `auto` is checked as
 * the target it would try.
 */
export function offloadIssues(config: SoupConfig, cwd: string): { errors: ConfigIssue[]; warnings: ConfigIssue[] } {
  const setting = config.training.activationOffloading;
  const target = setting === 'auto' ? autoOffloadTarget(config) : setting;
  const line = config.lines['training.activation_offloading'];
  const report = checkOffloadConfig({
    target,
    backend: 'onnxruntime',
    device: config.device.spec,
    saveDir: target === 'disk' ? offloadDirOf(config) : null,
    cwd,
  });
  const prefix = setting === 'auto' ? `auto (tries ${target}): ` : '';
  const issue = (message: string): ConfigIssue => ({
    path: 'training.activation_offloading',
    ...(line ? { line } : {}),
    message: `${prefix}${message}`,
  });
  return {
    errors: report.errors.map(issue),
    warnings: report.warnings.map(issue),
  };
}

/** What a run applies for `training.activation_offloading`: the store's target and scratch dir. */
export interface OffloadPlan {
  target: 'cpu' | 'disk';
  /** Absolute scratch directory (`disk` only). */
  saveDir: string | null;
}

/**
 * The offload `soup train` applies (and `soup probe` / `soup plan` measure): null when
 * `training.activation_offloading` is null or @soup/offload's check refuses it (the refusal is
 * reported by {@link offloadIssues}).
 */
export function offloadOf(config: SoupConfig, cwd: string): OffloadPlan | null {
  const target = config.training.activationOffloading;
  if (target === null || target === 'auto' || offloadIssues(config, cwd).errors.length > 0) return null;
  return { target, saveDir: target === 'disk' ? offloadDirOf(config) : null };
}

/**
 * The offloads `activation_offloading: auto` chooses between: none, and {@link autoOffloadTarget}
 * when its check passes. Any other setting: just {@link offloadOf}.
 */
export function offloadChoicesOf(config: SoupConfig, cwd: string): (OffloadPlan | null)[] {
  if (config.training.activationOffloading !== 'auto') return [offloadOf(config, cwd)];
  if (offloadIssues(config, cwd).errors.length > 0) return [null];
  const target = autoOffloadTarget(config);
  return [null, { target, saveDir: target === 'disk' ? offloadDirOf(config) : null }];
}

/** Throws a ConfigError for fields `soup train` cannot honour (quantization, LoRA, offload errors). */
export function assertTrainable(config: SoupConfig, file: string, cwd: string): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const at = (path: string): { line?: number } => (config.lines[path] ? { line: config.lines[path] } : {});
  if (config.training.quantization !== 'none') {
    issues.push({
      path: 'training.quantization',
      ...at('training.quantization'),
      message:
        `must be none for soup train (got ${config.training.quantization}): the onnx-train model trains in ` +
        `float32; the field is for batch-cache keys of other trainers`,
    });
  }
  if (config.training.loraR !== 0) {
    issues.push({
      path: 'training.lora.r',
      ...at('training.lora.r'),
      message:
        `must be 0 for soup train (got ${config.training.loraR}): onnx-train trains every parameter; the ` +
        `field is for batch-cache keys of other trainers`,
    });
  }
  const off = offloadIssues(config, cwd);
  issues.push(...off.errors);
  if (issues.length > 0) throw new ConfigError({ file, issues });
  return off.warnings;
}

/**
 * The `base` of batch-cache keys for soup.yaml models: `base#<hash>` where the hash covers the
 * geometry and the memory levers, so editing the model or the tier never reuses a stale answer.
 */
export function cacheBaseOf(config: SoupConfig, recompute: readonly string[], offload?: 'cpu' | 'disk' | null): string {
  // The offload that runs (auto's candidates each have their own entry); a fixed setting keys as before.
  const setting = config.training.activationOffloading;
  const identity = JSON.stringify({
    model: config.model,
    recompute,
    offload: offload !== undefined ? offload : setting === 'auto' ? null : setting,
  });
  return `${config.base}#${createHash('sha256').update(identity).digest('hex').slice(0, 8)}`;
}
