// What a batch-size probe answered, as the flat snake_case record `soup probe --json` prints.
import type { GlobalBatch } from './global-batch';
import type { StepGrowth } from './probe-steps';
import type { BatchResolution } from './resolve-batch';

/** Options of {@link probeRecord}: what the resolution does not hold. */
export interface ProbeRecordOptions {
  /** The device the trials ran on (@soup/cuda-probe's deviceIdentity). */
  device: { gpuName: string; gpuMemoryGb: number };
  /** With a global batch G: the micro-batch's m, a and G go into the record. @default null */
  micro?: Pick<GlobalBatch, 'fields'> | null;
  /**
   * A soup.yaml probe: its checkpointing tier (null: not a soup.yaml probe, no `grad_ckpt` nor `offload`).
   * @default null
   */
  gradCkpt?: string | null;
  /** A soup.yaml probe: its offload target, null when off. @default null */
  offload?: 'cpu' | 'disk' | null;
  /** A command probed over several steps: what the steps after the first added at the answer. @default null */
  growth?: StepGrowth | null;
}

/**
 * The record of one resolved batch size: the size (and m, a, G with a global batch), where it came from, its cache
 * key and file, the device, the provenance, why it was or was not cached, the step growth and every trial. Keys
 * that do not apply are left out.
 */
export function probeRecord(r: BatchResolution, o: ProbeRecordOptions): Record<string, unknown> {
  const { micro = null, gradCkpt = null, offload = null, growth = null } = o;
  return {
    batch_size: r.batchSize,
    ...(micro ? micro.fields(r.batchSize) : {}),
    source: r.source,
    cache_key: r.cacheKey,
    cache_path: r.cachePath,
    device: { name: o.device.gpuName, memory_gb: o.device.gpuMemoryGb },
    ...(gradCkpt !== null ? { grad_ckpt: gradCkpt, offload } : {}),
    provenance: r.provenance,
    ...(r.skippedCache !== null ? { skipped_cache: r.skippedCache } : {}),
    ...(r.cappedFrom !== null ? { capped_from: r.cappedFrom } : {}),
    saved: r.saved,
    ...(r.notSavedReason !== null ? { not_saved_reason: r.notSavedReason } : {}),
    ...(r.flatPeak ? { flat_peak: r.flatPeak.warning } : {}),
    ...(growth
      ? {
          step_growth: {
            steps: growth.steps,
            peak_bytes: growth.peakBytes,
            one_step_peak_bytes: growth.oneStepPeakBytes,
            growth_bytes: growth.growthBytes,
            ...(growth.unknown !== null ? { unknown: growth.unknown } : {}),
          },
        }
      : {}),
    trials: r.trials,
  };
}
