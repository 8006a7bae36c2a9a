// What soup's own trainer is given for a run on this device, and what a resumed checkpoint says of it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SoupConfig } from '@soup/config';
import type { TrainerOptions } from '@soup/onnx-train';
import type { PreparedRun } from './prepare-run';

/** The trainer's options for this run on this device (m comes from the supervisor, per launch). */
export function trainerOptionsOf(
  config: SoupConfig,
  prepared: PreparedRun,
  cwd: string,
  run: string,
): Omit<TrainerOptions, 'microBatchSize'> {
  return {
    spec: prepared.spec,
    files: [config.data.trainPath],
    batchSize: prepared.globalBatchSize,
    totalSteps: config.training.steps,
    scheduleSteps: config.training.scheduleSteps ?? config.training.steps,
    lr: config.training.lr,
    warmupSteps: config.training.warmupSteps,
    seed: config.training.seed,
    evalFraction: 0,
    adamw: { weightDecay: config.training.weightDecay, maxGradNorm: config.training.gradClip },
    recompute: prepared.tier.recompute,
    // Offload runs onnx-train's segmented step: each block's saved activations go through the store.
    ...(prepared.offload
      ? {
          execution: 'segmented' as const,
          offload: { target: prepared.offload.target, saveDir: prepared.offload.saveDir, cwd },
        }
      : {}),
    executionProvider: config.device.kind,
    deviceId: config.device.id,
    ...(config.training.threads > 0 ? { intraOpNumThreads: config.training.threads } : {}),
    // One run id everywhere: trainer_state.json, soup_run.json and latest.json.
    run,
  };
}

/** What a resumed checkpoint's trainer_state.json says of tokens and loss (zeros when unreadable). */
export function readResumedState(dir: string): { tokensConsumed: number; lastLoss: number | null } {
  try {
    const json = JSON.parse(readFileSync(join(dir, 'trainer_state.json'), 'utf8')) as Record<string, unknown>;
    return {
      tokensConsumed: Number(json.tokens_consumed ?? 0),
      lastLoss: typeof json.last_loss === 'number' ? json.last_loss : null,
    };
  } catch {
    return { tokensConsumed: 0, lastLoss: null };
  }
}
