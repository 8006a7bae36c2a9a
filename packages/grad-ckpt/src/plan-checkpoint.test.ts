import { describe, expect, test } from 'vitest';
import { GranularityError } from './errors';
import { planCheckpoint } from './plan-checkpoint';

/** onnx-train's module names (HF GPT-2 style). */
function gpt2Names(layers: number): string[] {
  const names = ['wte', 'wpe'];
  for (let i = 0; i < layers; i += 1) names.push(`h.${i}`, `h.${i}.ln_1`, `h.${i}.attn`, `h.${i}.ln_2`, `h.${i}.mlp`);
  names.push('ln_f', 'lm_head');
  return names;
}

/** A LLaMA-like `named_modules()` listing, attention with children. */
function llamaNames(layers: number): string[] {
  const names = ['', 'model', 'model.embed_tokens', 'model.layers'];
  for (let i = 0; i < layers; i += 1) {
    const b = `model.layers.${i}`;
    names.push(b, `${b}.self_attn`, `${b}.self_attn.q_proj`, `${b}.self_attn.o_proj`, `${b}.mlp`, `${b}.mlp.up_proj`);
  }
  names.push('model.norm', 'lm_head');
  return names;
}

describe('planCheckpoint', () => {
  test('full: every block (4/4)', () => {
    expect(planCheckpoint(gpt2Names(4), 'full')).toEqual(['h.0', 'h.1', 'h.2', 'h.3']);
    expect(planCheckpoint({ moduleNames: llamaNames(4), granularity: 'full' })).toHaveLength(4);
  });

  test('medium: every other block, counted across all blocks (3/6)', () => {
    expect(planCheckpoint(gpt2Names(6), 'medium')).toEqual(['h.0', 'h.2', 'h.4']);
    expect(planCheckpoint(gpt2Names(5), 'medium')).toEqual(['h.0', 'h.2', 'h.4']);
    expect(planCheckpoint(llamaNames(6), 'medium')).toEqual(['model.layers.0', 'model.layers.2', 'model.layers.4']);
  });

  test('selective: one per attention child (onnx-train names)', () => {
    expect(planCheckpoint(gpt2Names(3), 'selective')).toEqual(['h.0.attn', 'h.1.attn', 'h.2.attn']);
  });

  test('selective: every descendant whose relative name has attn/attention, as the original hooks them', () => {
    const plan = planCheckpoint(llamaNames(2), 'selective');
    expect(plan).toEqual([
      'model.layers.0.self_attn',
      'model.layers.0.self_attn.q_proj',
      'model.layers.0.self_attn.o_proj',
      'model.layers.1.self_attn',
      'model.layers.1.self_attn.q_proj',
      'model.layers.1.self_attn.o_proj',
    ]);
    const bert = [
      'encoder.layer.0',
      'encoder.layer.0.Attention',
      'encoder.layer.0.output',
      'encoder.layer.1',
      'encoder.layer.1.attention',
    ];
    expect(planCheckpoint(bert, 'selective')).toEqual(['encoder.layer.0.Attention', 'encoder.layer.1.attention']);
  });

  test('selective: h.1 does not claim the children of h.10', () => {
    const names = gpt2Names(11);
    const plan = planCheckpoint(names, 'selective');
    expect(plan).toHaveLength(11);
    expect(new Set(plan).size).toBe(11);
  });

  test('only names whose last dot-segment is a number are blocks', () => {
    const names = ['0', 'h', 'h.0a', 'h.x', 'h.', 'blocks.7', 'deep.nested.12', 'h.0.attn'];
    expect(planCheckpoint(names, 'full')).toEqual(['blocks.7', 'deep.nested.12']);
    // the attention child of a non-block is not selected
    expect(planCheckpoint(['h.x', 'h.x.attn'], 'selective')).toEqual([]);
    expect(planCheckpoint([], 'medium')).toEqual([]);
  });

  test('nested numbered modules count as blocks, as in the original', () => {
    const moe = ['layers.0', 'layers.0.experts.0', 'layers.0.experts.1', 'layers.1'];
    expect(planCheckpoint(moe, 'full')).toEqual(moe);
    expect(planCheckpoint(moe, 'medium')).toEqual(['layers.0', 'layers.0.experts.1']);
  });

  test('a name listed twice is planned once', () => {
    expect(planCheckpoint(['h.0', 'h.0', 'h.1'], 'full')).toEqual(['h.0', 'h.1']);
  });

  test.each([
    ['sparse', "granularity must be one of selective/medium/full, got 'sparse'"],
    ['FULL', "granularity must be one of selective/medium/full, got 'FULL'"],
    [null, 'granularity must be one of selective/medium/full, got None'],
    ["it's", `granularity must be one of selective/medium/full, got "it's"`],
  ])('unknown granularity %j throws naming the allowed values', (granularity, message) => {
    let caught: unknown;
    try {
      planCheckpoint(gpt2Names(2), granularity);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(GranularityError);
    const err = caught as GranularityError;
    expect(err.message).toBe(message);
    expect(err.code).toBe('SOUP_GRAD_CKPT_BAD_GRANULARITY');
    expect(err.name).toBe('GranularityError');
    expect(err.granularity).toBe(granularity);
  });
});
