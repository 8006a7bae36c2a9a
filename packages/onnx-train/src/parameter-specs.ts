import type { GptSpec } from './gpt-spec';

/** How a parameter is initialised (GPT-2's scheme). */
export type ParamInit = { kind: 'normal'; std: number } | { kind: 'constant'; value: number };

/** One trainable tensor of the model. */
export interface ParamSpec {
  /** Hugging Face GPT-2 style name, e.g. `h.0.attn.c_attn.weight`. */
  name: string;
  shape: readonly number[];
  init: ParamInit;
  /**
   * AdamW applies decoupled weight decay: true for linear weight matrices only (not biases, LayerNorm or embeddings).
   */
  weightDecay: boolean;
  /** The module that owns it (one of `moduleNames(spec)`). */
  module: string;
}

/** Every parameter of the model, in a stable order (embeddings, blocks, final norm, head). */
export function parameterSpecs(spec: GptSpec): ParamSpec[] {
  const { vocabSize: V, seqLen: T, dModel: D, dFF: F, nLayers: L } = spec;
  const std = 0.02;
  const projStd = 0.02 / Math.sqrt(2 * L);
  const normal = (s: number): ParamInit => ({ kind: 'normal', std: s });
  const zeros: ParamInit = { kind: 'constant', value: 0 };
  const ones: ParamInit = { kind: 'constant', value: 1 };
  const out: ParamSpec[] = [
    { name: 'wte.weight', shape: [V, D], init: normal(std), weightDecay: false, module: 'wte' },
    { name: 'wpe.weight', shape: [T, D], init: normal(std), weightDecay: false, module: 'wpe' },
  ];
  for (let i = 0; i < L; i++) {
    const h = `h.${i}`;
    out.push(
      { name: `${h}.ln_1.weight`, shape: [D], init: ones, weightDecay: false, module: h },
      { name: `${h}.ln_1.bias`, shape: [D], init: zeros, weightDecay: false, module: h },
      { name: `${h}.attn.c_attn.weight`, shape: [D, 3 * D], init: normal(std), weightDecay: true, module: `${h}.attn` },
      { name: `${h}.attn.c_attn.bias`, shape: [3 * D], init: zeros, weightDecay: false, module: `${h}.attn` },
      { name: `${h}.attn.c_proj.weight`, shape: [D, D], init: normal(projStd), weightDecay: true, module: `${h}.attn` },
      { name: `${h}.attn.c_proj.bias`, shape: [D], init: zeros, weightDecay: false, module: `${h}.attn` },
      { name: `${h}.ln_2.weight`, shape: [D], init: ones, weightDecay: false, module: h },
      { name: `${h}.ln_2.bias`, shape: [D], init: zeros, weightDecay: false, module: h },
      { name: `${h}.mlp.c_fc.weight`, shape: [D, F], init: normal(std), weightDecay: true, module: `${h}.mlp` },
      { name: `${h}.mlp.c_fc.bias`, shape: [F], init: zeros, weightDecay: false, module: `${h}.mlp` },
      { name: `${h}.mlp.c_proj.weight`, shape: [F, D], init: normal(projStd), weightDecay: true, module: `${h}.mlp` },
      { name: `${h}.mlp.c_proj.bias`, shape: [D], init: zeros, weightDecay: false, module: `${h}.mlp` },
    );
  }
  out.push(
    { name: 'ln_f.weight', shape: [D], init: ones, weightDecay: false, module: 'ln_f' },
    { name: 'ln_f.bias', shape: [D], init: zeros, weightDecay: false, module: 'ln_f' },
  );
  if (!spec.tieEmbeddings) {
    out.push({ name: 'lm_head.weight', shape: [V, D], init: normal(std), weightDecay: true, module: 'lm_head' });
  }
  return out;
}

/** Number of scalars in a shape. */
export function shapeSize(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}
