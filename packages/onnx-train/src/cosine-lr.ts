/** Learning-rate schedule: linear warmup, then cosine decay to `minLr` at `totalSteps`. */
export interface CosineLrOptions {
  /** The optimizer step about to be taken, 1-based. */
  step: number;
  /** Peak learning rate. */
  lr: number;
  /** Steps of linear warmup from lr/warmupSteps to lr. @default 0 */
  warmupSteps?: number;
  /** Step at which the decay reaches `minLr` (stays there after). */
  totalSteps: number;
  /** @default 0 */
  minLr?: number;
}

/** The learning rate for `step`: `lr·step/warmup` during warmup, then `minLr + (lr − minLr)·½(1 + cos(π·progress))`. */
export function cosineLr(options: CosineLrOptions): number {
  const { step, lr, totalSteps } = options;
  const warmup = options.warmupSteps ?? 0;
  const minLr = options.minLr ?? 0;
  if (warmup > 0 && step <= warmup) return (lr * step) / warmup;
  const span = Math.max(1, totalSteps - warmup);
  const progress = Math.min(1, Math.max(0, (step - warmup) / span));
  return minLr + (lr - minLr) * 0.5 * (1 + Math.cos(Math.PI * progress));
}
