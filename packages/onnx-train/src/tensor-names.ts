/**
 * Names of the training graph's inputs and outputs. Parameters are fed under their own
 * names (`h.0.attn.c_attn.weight`); everything else derives from them here.
 */
export const tensorNames = {
  /** `[batch, seqLen]` int64 token ids. */
  inputIds: 'input_ids',
  /** `[batch, seqLen]` int64 next-token targets (`labels[b, t]` is the token after `input_ids[b, t]`). */
  labels: 'labels',
  /** Scalar learning rate for this step (model dtype). */
  lr: 'lr',
  /** Scalar int64: the 1-based optimizer step (bias correction uses max(step, 1)). */
  step: 'step',
  /** Scalar mean cross-entropy over all tokens. */
  loss: 'loss',
  /** Scalar global L2 norm of the gradients, before clipping. */
  gradNorm: 'grad_norm',
  adamM: (param: string): string => `adam_m.${param}`,
  adamV: (param: string): string => `adam_v.${param}`,
  /** Output holding the new value of an input (a parameter or a moment). */
  updated: (input: string): string => `updated.${input}`,
  /** Output of a `mode: 'gradients'` graph: d(loss)/d(param). */
  grad: (param: string): string => `grad.${param}`,
} as const;
