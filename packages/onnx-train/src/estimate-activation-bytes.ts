import type { FloatDType } from './_graph';
import type { SavedDim } from './_module';
import { buildModules, normalizeRecompute } from './build-training-model';
import type { GptSpec } from './gpt-spec';

export interface EstimateActivationBytesOptions {
  spec: GptSpec;
  batchSize: number;
  /** @default 'float32' */
  dtype?: FloatDType;
  /** @default [] */
  recompute?: readonly string[];
}

export interface ActivationEstimate {
  /** Bytes each module keeps from its forward for its backward (`wte+wpe`, `h.<i>`, `ln_f`, `lm_head`). */
  byModule: Record<string, number>;
  /** Sum over modules: the saved activations alive at the start of the backward. */
  totalBytes: number;
}

/**
 * Bytes of the tensors each module's backward reads from its forward, from the modules'
 * declared `saves` (a recomputed block keeps only its input and its mid-block residual). A static count that
 * ignores the backward's own temporaries and allocator overhead: measure a step for the truth.
 */
export function estimateActivationBytes(options: EstimateActivationBytesOptions): ActivationEstimate {
  const { spec, batchSize } = options;
  const floatBytes = (options.dtype ?? 'float32') === 'float64' ? 8 : 4;
  const dim = (d: SavedDim): number => (d === 'batch' ? batchSize : d === 'tokens' ? batchSize * spec.seqLen : d);
  const byModule: Record<string, number> = {};
  let totalBytes = 0;
  for (const m of buildModules(spec, normalizeRecompute(spec, options.recompute ?? []))) {
    let bytes = 0;
    for (const s of m.saves)
      bytes += s.shape.reduce<number>((n, d) => n * dim(d), 1) * (s.type === 'int64' ? 8 : floatBytes);
    byModule[m.name] = bytes;
    totalBytes += bytes;
  }
  return { byModule, totalBytes };
}
