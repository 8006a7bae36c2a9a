/** A recompute granularity, as in the Python original: every block, every other block, or attention only. */
export type Granularity = 'full' | 'medium' | 'selective';

/** The named tiers. `'budget'` is new in soup (see {@link BudgetTierConfig}). */
export type TierName = 'off' | 'full' | 'medium' | 'selective' | 'auto' | 'budget';

/**
 * What a config may hold for gradient checkpointing, exactly like the Python `TierLike`:
 * `false` / `null` / `undefined` / `''` mean off, `true` means `'full'`; any other string
 * resolves to off (the validator {@link validateTierConfig} flags it).
 */
export type TierLike = boolean | null | undefined | TierName | (string & {});

/** Parameters shared by {@link resolveGranularity}, {@link resolveGradientCheckpointing} and {@link describeTier}. */
export interface TierParams {
  /** The configured tier. */
  tier: TierLike;
  /**
   * Device memory in GB, used by `'auto'` only. `null`/`undefined` (or `NaN`) mean unknown.
   * @default null
   */
  gpuMemoryGb?: number | null;
  /**
   * Memory budget for `tier: 'budget'` (bytes of peak memory the step may use); only read by
   * {@link describeTier} here — the plan itself comes from {@link planForBudget}.
   * @default undefined
   */
  memoryBudgetBytes?: number;
}

/** `tier: 'budget'`: recompute the smallest set of blocks whose predicted peak fits `memoryBudgetBytes`. */
export interface BudgetTierConfig {
  tier: 'budget';
  /** Peak memory the step may use, in bytes (baseline + activations). Required, positive. */
  memoryBudgetBytes: number;
}

/** A fixed tier (anything but `'budget'`), optionally with the device memory for `'auto'`. */
export interface FixedTierConfig {
  tier: Exclude<TierLike, 'budget'>;
  /** Device memory in GB for `'auto'`. @default null */
  gpuMemoryGb?: number | null;
}

/** A gradient-checkpointing config as a trainer (e.g. onnx-train) receives it. */
export type GradientCheckpointConfig = FixedTierConfig | BudgetTierConfig;

/** HF `TrainingArguments` kwargs, or `{}` when checkpointing is off. */
export type GradientCheckpointingKwargs =
  | { gradient_checkpointing: true; gradient_checkpointing_kwargs: { use_reentrant: false } }
  | Record<string, never>;

/** One block the budget planner may choose to recompute. */
export interface BudgetBlock {
  /** Module name, e.g. `h.3`. Unique within the list. */
  name: string;
  /** Bytes of activations this block keeps alive from its forward to its backward (measured). */
  activationBytes: number;
  /** Measured cost of re-running the block's forward, in ms; only breaks ties between equal `activationBytes`. */
  recomputeCostMs?: number;
}
