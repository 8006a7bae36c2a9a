import { combine, hashString, seedWords, Xoshiro128 } from './_random';
import type { FloatDType } from './_graph';
import type { GptSpec } from './gpt-spec';
import { parameterSpecs, shapeSize } from './parameter-specs';

/** A parameter or optimizer tensor in the model's dtype. */
export type FloatArray = Float32Array | Float64Array;

export interface InitParametersOptions {
  spec: GptSpec;
  /** @default 0 */
  seed?: number;
  /** @default 'float32' */
  dtype?: FloatDType;
  /** Multiplies every normal init's std (e.g. larger values for a gradient check). @default 1 */
  stdScale?: number;
}

/**
 * GPT-2 initialisation, deterministic per (seed, parameter name): weights ~ N(0, 0.02),
 * residual projections (`c_proj`) ~ N(0, 0.02/√(2·nLayers)), biases 0, LayerNorm gains 1.
 * Each tensor has its own stream, so adding layers does not change the others.
 */
export function initParameters(options: InitParametersOptions): Map<string, FloatArray> {
  const seed = options.seed ?? 0;
  const dtype = options.dtype ?? 'float32';
  const scale = options.stdScale ?? 1;
  const [lo, hi] = seedWords(seed);
  const out = new Map<string, FloatArray>();
  for (const p of parameterSpecs(options.spec)) {
    const n = shapeSize(p.shape);
    const arr = dtype === 'float64' ? new Float64Array(n) : new Float32Array(n);
    if (p.init.kind === 'constant') arr.fill(p.init.value);
    else {
      const rng = new Xoshiro128(combine(lo, hi, hashString(p.name)));
      const std = p.init.std * scale;
      for (let i = 0; i < n; i++) arr[i] = rng.nextNormal() * std;
    }
    out.set(p.name, arr);
  }
  return out;
}
