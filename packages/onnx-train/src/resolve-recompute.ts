import {
  describeTier,
  planCheckpoint,
  resolveGranularity,
  validateTierConfig,
  type BudgetTierConfig,
  type FixedTierConfig,
  type Granularity,
  type TierLike,
} from '@soup/grad-ckpt';
import { normalizeRecompute } from './build-training-model';
import { TrainInputError } from './errors';
import type { GptSpec } from './gpt-spec';
import { moduleNames } from './module-names';
import { selectiveToCore } from './selective-to-core';

/** `@soup/grad-ckpt`'s `{tier: 'budget', memoryBudgetBytes}`, plus the batch size the plan is measured at. */
export interface BudgetTierOption extends BudgetTierConfig {
  /**
   * Sequences per step the plan is measured with. `Trainer` and `runOneStep` fill in their own
   * batch size; `TrainStep.create` (which does not know the batch) needs it here.
   * @default undefined (filled in by Trainer / runOneStep)
   */
  batchSize?: number;
}

/**
 * A gradient-checkpointing setting, as `TrainStep`, `Trainer` and `runOneStep` take it: a bare
 * tier (`'off'`, `'full'`, `'medium'`, `'selective'`, `'auto'`, `true`, `false`, `null`), a
 * fixed tier with the device memory `'auto'` reads (`{tier: 'auto', gpuMemoryGb: 40}`), or the
 * measured budget tier (`{tier: 'budget', memoryBudgetBytes}`).
 */
export type GradientCheckpointingOption = TierLike | FixedTierConfig | BudgetTierOption;

/** Options of {@link resolveRecompute}. */
export interface ResolveRecomputeOptions {
  spec: GptSpec;
  /** The tier. @default undefined (use `recompute`) */
  gradientCheckpointing?: GradientCheckpointingOption;
  /** Explicit module names; only when no tier (or an off tier) is given. @default [] */
  recompute?: readonly string[];
}

/** What a tier means for this model. */
export interface ResolvedRecompute {
  /** Modules to recompute (normalised, forward order); `[]` for off, and for `'budget'` until planned. */
  recompute: string[];
  /** `full` / `medium` / `selective`, or null (off, explicit `recompute`, or `'budget'`). */
  granularity: Granularity | null;
  /**
   * `describeTier`'s text (`full (every block)`, `budget (peak ≤ 1.50 GiB)`), or `recompute h.0, h.2` for an explicit
   * set.
   */
  description: string;
  /** Set for `tier: 'budget'`: what `planBudgetTier` needs. */
  budget: { memoryBudgetBytes: number; batchSize: number | undefined } | null;
}

function isConfig(value: GradientCheckpointingOption): value is FixedTierConfig | BudgetTierOption {
  return typeof value === 'object' && value !== null;
}

/**
 * Resolves a gradient-checkpointing tier to the modules the training graph recomputes, with
 * `@soup/grad-ckpt`: `planCheckpoint(moduleNames(spec), resolveGranularity(tier, gpuMemoryGb))`.
 * `full` → every block `h.<i>`, `medium` → `h.0, h.2, …`, `selective` → every `h.<i>.attn.core`
 * (planCheckpoint selects the attention modules `h.<i>.attn`, as the Python original does; onnx-train
 * applies that as attention-core recompute, Megatron-LM's selective activation recomputation: only the
 * `[batch, H, T, T]` probabilities are recomputed, q/k/v/o stay saved — see {@link selectiveToCore}),
 * `auto` → by `gpuMemoryGb` (unknown → full), off → `[]`. `'budget'` cannot be resolved without
 * measuring: it comes back with `budget` set and `recompute: []` (see `planBudgetTier`).
 *
 * @throws {TrainInputError} on an unknown tier, a budget without a positive `memoryBudgetBytes`,
 * or a tier and an explicit `recompute` given together.
 */
export function resolveRecompute(options: ResolveRecomputeOptions): ResolvedRecompute {
  const { spec, gradientCheckpointing } = options;
  const explicit = options.recompute ?? [];
  const config =
    gradientCheckpointing === undefined
      ? { tier: null }
      : isConfig(gradientCheckpointing)
        ? gradientCheckpointing
        : { tier: gradientCheckpointing };
  if (!('tier' in config)) {
    throw new TrainInputError(
      "gradientCheckpointing must be a tier ('full', 'medium', …) or an object with a `tier` field, e.g. {tier: " +
        "'budget', memoryBudgetBytes}",
    );
  }
  const report = validateTierConfig({
    tier: config.tier,
    ...('gpuMemoryGb' in config && config.gpuMemoryGb !== undefined ? { gpuMemoryGb: config.gpuMemoryGb } : {}),
    ...('memoryBudgetBytes' in config ? { memoryBudgetBytes: config.memoryBudgetBytes } : {}),
  });
  if (report.errors.length > 0) throw new TrainInputError(`gradientCheckpointing: ${report.errors.join(' ')}`);
  const off =
    config.tier === false ||
    config.tier === null ||
    config.tier === undefined ||
    config.tier === '' ||
    config.tier === 'off';
  if (!off && explicit.length > 0) {
    throw new TrainInputError(
      `pass either gradientCheckpointing (a tier, here ${JSON.stringify(config.tier)}) or recompute (explicit ` +
        `module names), not both`,
    );
  }
  if (config.tier === 'budget') {
    const c = config as BudgetTierOption;
    if (c.batchSize !== undefined && !(Number.isInteger(c.batchSize) && c.batchSize > 0)) {
      throw new TrainInputError(
        `gradientCheckpointing.batchSize must be a positive integer (got ${String(c.batchSize)})`,
      );
    }
    return {
      recompute: [],
      granularity: null,
      description: describeTier({ tier: 'budget', memoryBudgetBytes: c.memoryBudgetBytes }),
      budget: { memoryBudgetBytes: c.memoryBudgetBytes, batchSize: c.batchSize },
    };
  }
  if (off) {
    const recompute = normalizeRecompute(spec, explicit);
    return {
      recompute,
      granularity: null,
      description: recompute.length > 0 ? `recompute ${recompute.join(', ')}` : 'off',
      budget: null,
    };
  }
  const gpuMemoryGb = 'gpuMemoryGb' in config ? config.gpuMemoryGb : undefined;
  const tierParams = { tier: config.tier, ...(gpuMemoryGb !== undefined ? { gpuMemoryGb } : {}) };
  const granularity = resolveGranularity(tierParams);
  const description = describeTier(tierParams);
  if (granularity === null) return { recompute: [], granularity: null, description, budget: null };
  const planned = planCheckpoint({ moduleNames: moduleNames(spec), granularity });
  const recompute = normalizeRecompute(
    spec,
    granularity === 'selective' ? selectiveToCore({ moduleNames: planned }) : planned,
  );
  return { recompute, granularity, description, budget: null };
}
