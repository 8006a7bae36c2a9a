import { describe, expect, it } from 'vitest';
import { planBytes, planFeeds } from './_synthetic-feeds';

const opts = { batchSize: 4, maxLength: 16, padId: 50257, vocabSize: 50257 };

describe('planFeeds', () => {
  it('maps the first symbolic dim to the batch and the second to maxLength, per input', () => {
    const { feeds, notes } = planFeeds(
      [
        { name: 'input_ids', isTensor: true, type: 'int64', shape: ['batch', 'sequence'] },
        { name: 'attention_mask', isTensor: true, type: 'int64', shape: ['batch', 'sequence'] },
        { name: 'position_ids', isTensor: true, type: 'int64', shape: ['b', 's'] },
        { name: 'token_type_ids', isTensor: true, type: 'int32', shape: ['batch', 'sequence'] },
        { name: 'labels', isTensor: true, type: 'int64', shape: ['batch', 'sequence'] },
        { name: 'past', isTensor: true, type: 'float16', shape: ['batch', 12, 'past_len', 64, 'extra'] },
        { name: 'scale', isTensor: true, type: 'float32', shape: [3] },
        { name: 'causal_mask', isTensor: true, type: 'bool', shape: [1, 'n'] },
        { name: 'dropout_on', isTensor: true, type: 'bool', shape: [] },
      ],
      opts,
    );
    expect(feeds).toEqual([
      { name: 'input_ids', type: 'int64', dims: [4, 16], fill: { kind: 'constant', value: 0 }, batched: true },
      { name: 'attention_mask', type: 'int64', dims: [4, 16], fill: { kind: 'constant', value: 1 }, batched: true },
      { name: 'position_ids', type: 'int64', dims: [4, 16], fill: { kind: 'arange' }, batched: true },
      { name: 'token_type_ids', type: 'int32', dims: [4, 16], fill: { kind: 'constant', value: 0 }, batched: true },
      { name: 'labels', type: 'int64', dims: [4, 16], fill: { kind: 'constant', value: 0 }, batched: true },
      { name: 'past', type: 'float16', dims: [4, 12, 16, 64, 1], fill: { kind: 'constant', value: 0 }, batched: true },
      { name: 'scale', type: 'float32', dims: [3], fill: { kind: 'constant', value: 0 }, batched: false },
      { name: 'causal_mask', type: 'bool', dims: [1, 4], fill: { kind: 'constant', value: 1 }, batched: true },
      { name: 'dropout_on', type: 'bool', dims: [], fill: { kind: 'constant', value: 0 }, batched: false },
    ]);
    expect(notes).toEqual(['input "past": symbolic dimension "extra" set to 1']);
  });

  it('takes the pad id modulo the vocab size (an appended pad token past the base vocab)', () => {
    const { feeds } = planFeeds([{ name: 'input_ids', isTensor: true, type: 'int64', shape: ['b', 's'] }], {
      ...opts,
      padId: 128255,
      vocabSize: 128256,
    });
    expect(feeds[0]!.fill).toEqual({ kind: 'constant', value: 128255 });
    const wrapped = planFeeds([{ name: 'labels', isTensor: true, type: 'int64', shape: ['b', 's'] }], {
      ...opts,
      padId: 300,
      vocabSize: 256,
    });
    expect(wrapped.feeds[0]!.fill).toEqual({ kind: 'constant', value: 44 });
  });

  it("feeds overridden inputs their constant (a training graph's lr and step)", () => {
    const { feeds } = planFeeds(
      [
        { name: 'lr', isTensor: true, type: 'float32', shape: [] },
        { name: 'step', isTensor: true, type: 'int64', shape: [] },
        { name: 'h.0.attn.c_attn.weight', isTensor: true, type: 'float32', shape: [256, 768] },
      ],
      { ...opts, overrides: { lr: 1e-3, step: 1 } },
    );
    expect(feeds.map((f) => [f.name, f.dims, f.fill])).toEqual([
      ['lr', [], { kind: 'constant', value: 1e-3 }],
      ['step', [], { kind: 'constant', value: 1 }],
      ['h.0.attn.c_attn.weight', [256, 768], { kind: 'constant', value: 0 }],
    ]);
  });

  it('treats a dynamic dim reported as -1 as symbolic', () => {
    const { feeds } = planFeeds([{ name: 'x', isTensor: true, type: 'float32', shape: [-1, -1, 8] }], opts);
    expect(feeds[0]!.dims).toEqual([4, 16, 8]);
  });

  it('refuses string and non-tensor inputs, naming them', () => {
    expect(() => planFeeds([{ name: 'prompt', isTensor: true, type: 'string', shape: ['b'] }], opts)).toThrow(
      /"prompt" has type string/,
    );
    expect(() => planFeeds([{ name: 'seq', isTensor: false }], opts)).toThrow(/"seq" is not a tensor/);
  });

  it('sizes the plan', () => {
    const { feeds } = planFeeds(
      [
        { name: 'input_ids', isTensor: true, type: 'int64', shape: ['b', 's'] },
        { name: 'f', isTensor: true, type: 'float16', shape: ['b', 's', 2] },
        { name: 'lr', isTensor: true, type: 'float32', shape: [3] },
      ],
      opts,
    );
    expect(planBytes(feeds)).toBe(4 * 16 * 8 + 4 * 16 * 2 * 2 + 3 * 4);
    expect(planBytes(feeds, true)).toBe(4 * 16 * 8 + 4 * 16 * 2 * 2);
  });
});
