/** Options of {@link selectiveToCore}. */
export interface SelectiveToCoreOptions {
  /** Module names as `planCheckpoint` returns them for `'selective'` (`h.<i>.attn`, …). */
  moduleNames: readonly string[];
}

/**
 * The `selective` tier as onnx-train applies it: each attention module `h.<i>.attn` that
 * `@soup/grad-ckpt`'s `planCheckpoint` selects becomes `h.<i>.attn.core` — only the attention
 * scores and softmax are recomputed in the backward (from the saved q and k), Megatron-LM's
 * "selective activation recomputation" (Korthikanti et al. 2022). Other names pass through, in
 * order. Whole-attention recompute stays available as an explicit `recompute: ['h.<i>.attn', …]`.
 *
 * @example selectiveToCore({ moduleNames: ['h.0.attn', 'h.1'] }) // ['h.0.attn.core', 'h.1']
 */
export function selectiveToCore(options: SelectiveToCoreOptions): string[] {
  return options.moduleNames.map((n) => (/^h\.\d+\.attn$/.test(n) ? `${n}.core` : n));
}
