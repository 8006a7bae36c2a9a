import type { GptSpec } from './gpt-spec';

/**
 * Matrix-multiply FLOPs of one training step per token (forward + backward = 3 × forward),
 * counting what the graph computes: the four linear layers per block, the full (unmasked)
 * `[seqLen, seqLen]` score and value products, and the LM head. Elementwise work is not counted.
 */
export function trainingFlopsPerToken(spec: GptSpec): number {
  const { dModel: D, dFF: F, seqLen: T, vocabSize: V, nLayers: L } = spec;
  const perLayer = 2 * (3 * D * D + D * D + 2 * D * F) + 2 * 2 * T * D;
  return 3 * (L * perLayer + 2 * D * V);
}
