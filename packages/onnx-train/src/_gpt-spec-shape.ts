// The spec's shape alone, so the validator and the spec's constructor import it without importing each other.
/**
 * The geometry of a GPT-2-style decoder: token + learned position embeddings, pre-LayerNorm
 * blocks (causal multi-head attention, tanh-GELU MLP, residuals), a final LayerNorm, an LM head
 * and next-token cross-entropy (mean over tokens). Parameter names follow Hugging Face GPT-2
 * (`wte.weight`, `h.0.attn.c_attn.weight`, ...); linear weights are stored `[in, out]` like
 * GPT-2's Conv1D, the untied LM head `[vocab, dModel]` like `nn.Linear`.
 */
export interface GptSpec {
  /** Tokens in the vocabulary (256 for the byte-level tokenizer). */
  vocabSize: number;
  /** Tokens per sequence; fixed in the graph (the batch dimension is dynamic). */
  seqLen: number;
  /** Width of the residual stream. */
  dModel: number;
  /** Attention heads; must divide `dModel`. */
  nHeads: number;
  /** Transformer blocks (`h.0` … `h.<nLayers-1>`). */
  nLayers: number;
  /** Hidden width of the MLP (GPT-2 uses 4 × dModel). */
  dFF: number;
  /** The LM head reuses `wte.weight` (GPT-2 default) instead of its own `lm_head.weight`. */
  tieEmbeddings: boolean;
}

/** A `GptSpec` with optional fields; see {@link defineGptSpec}. */
export interface GptSpecInput extends Omit<GptSpec, 'dFF' | 'tieEmbeddings'> {
  /** @default 4 * dModel */
  dFF?: number;
  /** @default true */
  tieEmbeddings?: boolean;
}
