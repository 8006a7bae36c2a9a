import type { GptSpec } from './gpt-spec';

/**
 * What soup's model computes, in Hugging Face `transformers`' GPT-2 terms: the `config.json` a
 * `GPT2Config` accepts for a {@link GptSpec}. The graph (see `_layers.ts`) is GPT-2's: learned
 * position embeddings (`wpe`), pre-LayerNorm blocks with eps 1e-5, attention scaled by 1/√d_head,
 * the tanh GELU (`gelu_new`), a final LayerNorm, no dropout, and (by default) the LM head tied to
 * `wte`. Parameters are saved under GPT-2's own names, linear weights `[in, out]` like its Conv1D,
 * so `model.safetensors` loads into `GPT2LMHeadModel` without renaming or transposing.
 * The vocabulary is raw bytes (ids 0–255): there is no tokenizer file and no special token.
 */
export interface Gpt2Config {
  model_type: 'gpt2';
  architectures: ['GPT2LMHeadModel'];
  vocab_size: number;
  n_positions: number;
  n_ctx: number;
  n_embd: number;
  n_layer: number;
  n_head: number;
  n_inner: number | null;
  activation_function: 'gelu_new';
  layer_norm_epsilon: number;
  tie_word_embeddings: boolean;
  resid_pdrop: number;
  embd_pdrop: number;
  attn_pdrop: number;
  initializer_range: number;
  scale_attn_weights: true;
  scale_attn_by_inverse_layer_idx: false;
  reorder_and_upcast_attn: false;
  use_cache: true;
  bos_token_id: null;
  eos_token_id: null;
  torch_dtype: 'float32' | 'float64';
  /** Not a GPT2Config field (kept as an extra attribute): token ids are UTF-8 bytes. */
  soup_tokenizer: 'bytes';
}

/** LayerNorm epsilon of the graph (GPT-2's). */
export const GPT2_LAYER_NORM_EPSILON = 1e-5;

/** The `config.json` of a checkpoint of `spec`. */
export function gpt2Config(spec: GptSpec, dtype: 'float32' | 'float64' = 'float32'): Gpt2Config {
  return {
    model_type: 'gpt2',
    architectures: ['GPT2LMHeadModel'],
    vocab_size: spec.vocabSize,
    n_positions: spec.seqLen,
    n_ctx: spec.seqLen,
    n_embd: spec.dModel,
    n_layer: spec.nLayers,
    n_head: spec.nHeads,
    n_inner: spec.dFF === 4 * spec.dModel ? null : spec.dFF,
    activation_function: 'gelu_new',
    layer_norm_epsilon: GPT2_LAYER_NORM_EPSILON,
    tie_word_embeddings: spec.tieEmbeddings,
    resid_pdrop: 0,
    embd_pdrop: 0,
    attn_pdrop: 0,
    initializer_range: 0.02,
    scale_attn_weights: true,
    scale_attn_by_inverse_layer_idx: false,
    reorder_and_upcast_attn: false,
    use_cache: true,
    bos_token_id: null,
    eos_token_id: null,
    torch_dtype: dtype,
    soup_tokenizer: 'bytes',
  };
}

/** The `generation_config.json` of a checkpoint of `spec`: sampling within the trained context. */
export function gpt2GenerationConfig(spec: GptSpec): Record<string, unknown> {
  return {
    _from_model_config: true,
    bos_token_id: null,
    eos_token_id: null,
    max_length: spec.seqLen,
    do_sample: true,
    top_k: 50,
  };
}
