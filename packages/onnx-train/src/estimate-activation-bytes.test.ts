import { describe, expect, it } from 'vitest';
import { estimateActivationBytes } from './estimate-activation-bytes';
import { defineGptSpec } from './gpt-spec';
import { runOneStep } from './run-one-step';

const spec = defineGptSpec({ vocabSize: 256, seqLen: 16, dModel: 32, nHeads: 4, nLayers: 2 });

describe('estimateActivationBytes', () => {
  it('counts each saved tensor of each module; a recomputed block keeps its input and mid-block residual', () => {
    const N = 3 * 16; // tokens
    const plain = estimateActivationBytes({ spec, batchSize: 3 });
    const block = 4 * (2 * (N * 32 + N)) + 4 * (N * 32 * 5 + 3 * 4 * 16 * 16) + 4 * (N * 32 + 2 * N * 128);
    expect(plain.byModule['h.0']).toBe(block);
    expect(plain.byModule['wte+wpe']).toBe(8 * N);
    expect(plain.byModule.lm_head).toBe(4 * (N * 32 + N * 256));
    const full = estimateActivationBytes({ spec, batchSize: 3, recompute: ['h.0', 'h.1'] });
    expect(full.byModule['h.1']).toBe(2 * 4 * N * 32);
    expect(full.totalBytes).toBeLessThan(plain.totalBytes);
    expect(estimateActivationBytes({ spec, batchSize: 3, dtype: 'float64' }).byModule['h.0']).toBe(2 * block);
    // core-only attention recompute drops exactly the [batch, H, T, T] probabilities
    const core = estimateActivationBytes({ spec, batchSize: 3, recompute: ['h.0.attn.core'] });
    expect(core.byModule['h.0']).toBe(block - 4 * 3 * 4 * 16 * 16);
    // whole-module attention recompute keeps only the attention input
    const attn = estimateActivationBytes({ spec, batchSize: 3, recompute: ['h.0.attn'] });
    expect(attn.byModule['h.0']).toBe(block - 4 * (N * 32 * 5 + 3 * 4 * 16 * 16) + 4 * N * 32);
  });
});

describe('runOneStep', () => {
  it('builds, runs one synthetic step at a batch size and releases', async () => {
    const r = await runOneStep({ spec, batchSize: 2, intraOpNumThreads: 1, steps: 2 });
    expect(r).toMatchObject({ batchSize: 2, tokens: 32 });
    expect(r.loss).toBeGreaterThan(4);
    expect(r.runMs).toBeGreaterThan(0);
  });
});
