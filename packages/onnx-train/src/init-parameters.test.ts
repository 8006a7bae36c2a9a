import { describe, expect, it } from 'vitest';
import { defineGptSpec } from './gpt-spec';
import { initParameters } from './init-parameters';

const spec = defineGptSpec({ vocabSize: 64, seqLen: 16, dModel: 32, nHeads: 4, nLayers: 3 });

describe('initParameters', () => {
  it('is deterministic per seed and GPT-2 shaped (std 0.02, scaled residual projections, LN 1/0)', () => {
    const a = initParameters({ spec, seed: 5 });
    const b = initParameters({ spec, seed: 5 });
    const c = initParameters({ spec, seed: 6 });
    for (const [n, arr] of a) expect(Buffer.from(arr.buffer).equals(Buffer.from(b.get(n)!.buffer))).toBe(true);
    expect(Buffer.from(a.get('wte.weight')!.buffer).equals(Buffer.from(c.get('wte.weight')!.buffer))).toBe(false);
    const std = (x: ArrayLike<number>): number => {
      let s = 0;
      for (let i = 0; i < x.length; i++) s += x[i]! * x[i]!;
      return Math.sqrt(s / x.length);
    };
    expect(std(a.get('h.0.mlp.c_fc.weight')!)).toBeCloseTo(0.02, 2);
    expect(std(a.get('h.2.attn.c_proj.weight')!)).toBeCloseTo(0.02 / Math.sqrt(6), 3);
    expect(Array.from(a.get('h.1.ln_2.weight')!).every((v) => v === 1)).toBe(true);
    expect(Array.from(a.get('h.1.attn.c_attn.bias')!).every((v) => v === 0)).toBe(true);
  });

  it('gives each tensor its own stream: adding a layer leaves the others unchanged', () => {
    const three = initParameters({ spec, seed: 1 });
    const four = initParameters({ spec: { ...spec, nLayers: 4 }, seed: 1 });
    expect(Array.from(four.get('h.1.attn.c_attn.weight')!)).toEqual(Array.from(three.get('h.1.attn.c_attn.weight')!));
    expect(initParameters({ spec, seed: 1, dtype: 'float64' }).get('wpe.weight')).toBeInstanceOf(Float64Array);
  });
});
