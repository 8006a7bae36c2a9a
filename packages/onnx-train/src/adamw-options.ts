/** AdamW hyper-parameters baked into the training graph (the learning rate is a graph input). */
export interface AdamWOptions {
  /** @default 0.9 */
  beta1?: number;
  /** @default 0.999 */
  beta2?: number;
  /** @default 1e-8 */
  eps?: number;
  /** Decoupled weight decay, applied to linear weight matrices only. @default 0.01 */
  weightDecay?: number;
  /**
   * Clip gradients to this global L2 norm (torch `clip_grad_norm_` semantics); `0` or `Infinity` disables. @default 1
   */
  maxGradNorm?: number;
}

/** `AdamWOptions` with every default filled in. */
export type ResolvedAdamW = Required<AdamWOptions>;

/** Fills the AdamW defaults (torch.optim.AdamW's, plus clipping at 1.0 like the HF Trainer). */
export function resolveAdamW(opts: AdamWOptions = {}): ResolvedAdamW {
  return {
    beta1: opts.beta1 ?? 0.9,
    beta2: opts.beta2 ?? 0.999,
    eps: opts.eps ?? 1e-8,
    weightDecay: opts.weightDecay ?? 0.01,
    maxGradNorm: opts.maxGradNorm ?? 1,
  };
}
