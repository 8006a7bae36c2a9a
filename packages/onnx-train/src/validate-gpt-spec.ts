import type { GptSpec } from './_gpt-spec-shape';

/** Problems found in a spec: `errors` make it unusable, `warnings` are legal but unusual. */
export interface SpecValidation {
  errors: string[];
  warnings: string[];
}

const INT_FIELDS = ['vocabSize', 'seqLen', 'dModel', 'nHeads', 'nLayers', 'dFF'] as const;

/** Checks a `GptSpec` without throwing. Every message names the field and what is allowed. */
export function validateGptSpec(spec: unknown): SpecValidation {
  const errors: string[] = [];
  const warnings: string[] = [];
  if (typeof spec !== 'object' || spec === null) return { errors: ['spec must be an object'], warnings };
  const s = spec as Record<string, unknown>;
  for (const field of INT_FIELDS) {
    const v = s[field];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) {
      errors.push(`${field} must be a positive integer (got ${JSON.stringify(v)})`);
    }
  }
  if (typeof s.tieEmbeddings !== 'boolean') {
    errors.push(`tieEmbeddings must be a boolean (got ${JSON.stringify(s.tieEmbeddings)})`);
  }
  if (errors.length === 0) {
    const g = spec as GptSpec;
    if (g.dModel % g.nHeads !== 0) {
      errors.push(
        `dModel (${g.dModel}) must be divisible by nHeads (${g.nHeads}); pick nHeads among the divisors of dModel`,
      );
    }
    if (g.seqLen < 2) warnings.push(`seqLen ${g.seqLen} leaves attention with a single position`);
    if (g.seqLen > 4096) warnings.push(`seqLen ${g.seqLen}: the [seqLen, seqLen] causal mask is stored in the model`);
    if (g.dFF < g.dModel) warnings.push(`dFF (${g.dFF}) is smaller than dModel (${g.dModel}); GPT-2 uses 4 × dModel`);
  }
  return { errors, warnings };
}
