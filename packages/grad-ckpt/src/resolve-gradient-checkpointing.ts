import { tierArgs } from './_args';
import { resolveGranularity } from './resolve-granularity';
import type { GradientCheckpointingKwargs, TierLike, TierParams } from './types';

/**
 * HF `TrainingArguments` kwargs for a tier, as in the Python original:
 * `{gradient_checkpointing: true, gradient_checkpointing_kwargs: {use_reentrant: false}}` whenever
 * {@link resolveGranularity} is not `null`, else `{}`. Granularity is deliberately not encoded
 * here (HF has no such key); ask {@link resolveGranularity} / {@link planCheckpoint} for it.
 *
 * Accepts `({tier, gpuMemoryGb})` or `(tier, gpuMemoryGb)`. Returns a fresh object each call.
 */
export function resolveGradientCheckpointing(params: TierParams): GradientCheckpointingKwargs;
export function resolveGradientCheckpointing(tier: TierLike, gpuMemoryGb?: number | null): GradientCheckpointingKwargs;
export function resolveGradientCheckpointing(
  first: TierParams | TierLike,
  gpuMemoryGb?: number | null,
): GradientCheckpointingKwargs {
  if (resolveGranularity(tierArgs(first, gpuMemoryGb)) === null) return {};
  return { gradient_checkpointing: true, gradient_checkpointing_kwargs: { use_reentrant: false } };
}
