// A trainer command's probe and batch-cache key: one rule for soup probe --exec, soup run --probe and
// --try, so each command finds the answers the others cached.
import type { CacheKeyFields } from '@soup/batch-probe';
import { type ChildProbeFn, createCommandProbe, type DeviceIdentity, type StepsEvidence } from '@soup/cuda-probe';
import { withProbeSteps } from './probe-steps';
import type { PlanIo } from './resolve-batch';
import { trainerCacheBase } from './trainer-files';

/**
 * A probe trial's command under a global batch: {micro_batch_size} is the candidate ({batch_size} too), {grad_accum} 1
 * (one micro-batch).
 */
export function trialCommand(typed: string): string {
  return typed.replaceAll('{micro_batch_size}', '{batch_size}').replaceAll('{grad_accum}', '1');
}

/** The sequence length a probe's cache key holds where neither the flag nor a soup.yaml gives one. */
export const DEFAULT_MAX_LENGTH = 512;

/** Where a trainer command's trials run, how they are judged, and the cache key fields beside the base. */
export interface TrainerProbeOptions extends PlanIo {
  /** The device the trials run on (its name and memory are part of the cache key). */
  identity: DeviceIdentity;
  /** The CUDA index the trainer sees, when `identity` is a GPU. */
  deviceId: number;
  /** The memory budget, in bytes; null: the device's own. */
  budgetBytes: number | null;
  /** A trial running longer than this is killed. */
  timeoutMs: number;
  /** The flag a timed-out trial's message names. */
  timeoutName?: string;
  /** The sequence length in the cache key (`--max-length`; DEFAULT_MAX_LENGTH where nothing gives one). */
  maxLength: number;
  quantization: string;
  loraR: number;
  /** How a run shows the steps it ran by the trainer's own count (--try's timing runs): its trials' `stepsSeen`. */
  steps?: StepsEvidence | undefined;
}

/** A trial command's probe, the files it names and may import (their hashes), its cache base and key. */
export interface TrainerProbe {
  probe: ChildProbeFn;
  files: Record<string, string>;
  base: string;
  key: CacheKeyFields;
  /** Why the trainer's sources are unknown, so its answers are not cached (see trainerSources); null: listed. */
  keyUnknown: string | null;
}

/** The batch-cache key of `base` on this device. */
export function trainerKeyOf(base: string, o: TrainerProbeOptions): CacheKeyFields {
  return {
    base,
    maxLength: o.maxLength,
    quantization: o.quantization,
    loraR: o.loraR,
    gpuName: o.identity.gpuName,
    gpuMemoryGb: o.identity.gpuMemoryGb,
  };
}

/**
 * The probe for a trial command ({batch_size} still in; {probe_steps}, where it takes one, PROBE_STEPS) and its key
 * (`base` replaces the command and its files; the key holds the command as typed). On a GPU the trainer is judged
 * by its GPU memory (nvidia-smi, per process or the device's delta), the budget capping the GPU budget; on the CPU
 * by its sampled peak RSS against the budget; without a budget only by what it raised.
 */
export function trainerProbe(command: string, o: TrainerProbeOptions & { base?: string | undefined }): TrainerProbe {
  const probe = trainerTrialProbe(command, o);
  const { base, files, unknown } = trainerCacheBase(command, o);
  return { probe, files, base, key: trainerKeyOf(base, o), keyUnknown: unknown };
}

/** trainerProbe's probe alone, without its cache key (no file is read or hashed): a trial judged the same way. */
export function trainerTrialProbe(command: string, o: TrainerProbeOptions): ChildProbeFn {
  return createCommandProbe({
    command: withProbeSteps(command),
    env: o.env,
    cwd: o.cwd,
    timeoutMs: o.timeoutMs,
    ...(o.timeoutName !== undefined ? { timeoutName: o.timeoutName } : {}),
    signal: o.signal,
    ...(o.budgetBytes !== null ? { budgetBytes: o.budgetBytes } : {}),
    ...(o.identity.device === 'cuda' ? { gpu: { deviceId: o.deviceId } } : {}),
    ...(o.steps ? { steps: o.steps } : {}),
  });
}
