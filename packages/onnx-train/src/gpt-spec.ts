import { GptSpecError } from './errors';
import type { GptSpec, GptSpecInput } from './_gpt-spec-shape';
import { validateGptSpec } from './validate-gpt-spec';

export type { GptSpec, GptSpecInput } from './_gpt-spec-shape';

/** Fills defaults (`dFF = 4·dModel`, `tieEmbeddings = true`) and validates; throws `GptSpecError` naming the field. */
export function defineGptSpec(input: GptSpecInput): GptSpec {
  const spec: GptSpec = {
    vocabSize: input.vocabSize,
    seqLen: input.seqLen,
    dModel: input.dModel,
    nHeads: input.nHeads,
    nLayers: input.nLayers,
    dFF: input.dFF ?? 4 * input.dModel,
    tieEmbeddings: input.tieEmbeddings ?? true,
  };
  assertGptSpec(spec);
  return spec;
}

/** Throws a `GptSpecError` listing every problem `validateGptSpec` finds. */
export function assertGptSpec(spec: GptSpec): void {
  const { errors } = validateGptSpec(spec);
  if (errors.length > 0) throw new GptSpecError(`invalid GptSpec: ${errors.join('; ')}`);
}
