import type { GptSpec } from './gpt-spec';

/**
 * The model's module names, Hugging Face GPT-2 style, in forward order:
 * `wte`, `wpe`, then per block `h.<i>`, `h.<i>.attn`, `h.<i>.mlp`, then `ln_f`, `lm_head`.
 * Feed them to `@soup/grad-ckpt`'s `planCheckpoint`: names whose last segment is a number
 * (`h.3`) are blocks, names containing `attn` are attention sub-blocks. Any `h.<i>`,
 * `h.<i>.attn` or `h.<i>.mlp` can be passed back as `recompute`.
 */
export function moduleNames(spec: Pick<GptSpec, 'nLayers'>): string[] {
  const names = ['wte', 'wpe'];
  for (let i = 0; i < spec.nLayers; i++) names.push(`h.${i}`, `h.${i}.attn`, `h.${i}.mlp`);
  names.push('ln_f', 'lm_head');
  return names;
}
