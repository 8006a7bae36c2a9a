import { describe, expect, it } from 'vitest';
import { GptSpecError } from './errors';
import { defineGptSpec } from './gpt-spec';
import { moduleNames } from './module-names';
import { parameterSpecs } from './parameter-specs';
import { validateGptSpec } from './validate-gpt-spec';

describe('validateGptSpec / defineGptSpec', () => {
  it('accepts a GPT-2-like spec and fills the defaults', () => {
    const spec = defineGptSpec({ vocabSize: 256, seqLen: 128, dModel: 256, nHeads: 4, nLayers: 4 });
    expect(spec).toEqual({
      vocabSize: 256,
      seqLen: 128,
      dModel: 256,
      nHeads: 4,
      nLayers: 4,
      dFF: 1024,
      tieEmbeddings: true,
    });
    expect(validateGptSpec(spec)).toEqual({ errors: [], warnings: [] });
  });

  it('names each bad field and the fix', () => {
    const r = validateGptSpec({
      vocabSize: 0,
      seqLen: 1.5,
      dModel: 8,
      nHeads: 2,
      nLayers: true,
      dFF: 8,
      tieEmbeddings: 'yes',
    });
    expect(r.errors).toEqual([
      'vocabSize must be a positive integer (got 0)',
      'seqLen must be a positive integer (got 1.5)',
      'nLayers must be a positive integer (got true)',
      'tieEmbeddings must be a boolean (got "yes")',
    ]);
    expect(
      validateGptSpec({ vocabSize: 8, seqLen: 8, dModel: 10, nHeads: 4, nLayers: 1, dFF: 4, tieEmbeddings: true })
        .errors,
    ).toEqual(['dModel (10) must be divisible by nHeads (4); pick nHeads among the divisors of dModel']);
    expect(
      validateGptSpec({ vocabSize: 8, seqLen: 8, dModel: 8, nHeads: 4, nLayers: 1, dFF: 4, tieEmbeddings: true })
        .warnings,
    ).toHaveLength(1);
    expect(() => defineGptSpec({ vocabSize: 8, seqLen: 8, dModel: 10, nHeads: 4, nLayers: 1 })).toThrow(GptSpecError);
  });
});

describe('moduleNames / parameterSpecs', () => {
  it('lists HF GPT-2 style module names that planCheckpoint can select from', () => {
    expect(moduleNames({ nLayers: 2 })).toEqual([
      'wte',
      'wpe',
      'h.0',
      'h.0.attn',
      'h.0.mlp',
      'h.1',
      'h.1.attn',
      'h.1.mlp',
      'ln_f',
      'lm_head',
    ]);
    const blocks = moduleNames({ nLayers: 4 }).filter((n) => /\.\d+$/.test(n) || /^h\.\d+$/.test(n));
    expect(blocks).toEqual(['h.0', 'h.1', 'h.2', 'h.3']);
  });

  it('names every parameter after HF GPT-2, owned by a listed module', () => {
    const spec = defineGptSpec({ vocabSize: 256, seqLen: 128, dModel: 256, nHeads: 4, nLayers: 4 });
    const params = parameterSpecs(spec);
    expect(params).toHaveLength(2 + 12 * 4 + 2);
    const count = params.reduce((n, p) => n + p.shape.reduce((a, b) => a * b, 1), 0);
    expect(count).toBe(256 * 256 + 128 * 256 + 4 * (12 * 256 * 256 + 13 * 256) + 2 * 256);
    const names = new Set(moduleNames(spec));
    expect(params.every((p) => names.has(p.module))).toBe(true);
    expect(parameterSpecs({ ...spec, tieEmbeddings: false }).at(-1)).toMatchObject({
      name: 'lm_head.weight',
      shape: [256, 256],
    });
  });
});
