import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveAdamW } from './adamw-options';
import { ExecutionProviderError, TrainInputError } from './errors';
import { defineGptSpec } from './gpt-spec';
import type { FloatArray } from './init-parameters';
import { makeSyntheticBatch } from './make-synthetic-batch';
import { TrainStep, type StepMeasurement } from './train-step';

const spec = defineGptSpec({ vocabSize: 13, seqLen: 6, dModel: 8, nHeads: 2, nLayers: 2, dFF: 16 });

/** torch.optim.AdamW's update (plus clip_grad_norm_'s coefficient), written out in plain TypeScript. */
function adamwReference(a: {
  p: FloatArray;
  g: FloatArray;
  m: FloatArray;
  v: FloatArray;
  step: number;
  lr: number;
  clipCoef: number;
  decay: boolean;
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
}): { p: Float64Array; m: Float64Array; v: Float64Array } {
  const n = a.p.length;
  const p = new Float64Array(n);
  const m = new Float64Array(n);
  const v = new Float64Array(n);
  const bc1 = 1 - a.beta1 ** a.step;
  const bc2 = 1 - a.beta2 ** a.step;
  for (let i = 0; i < n; i++) {
    const g = a.g[i]! * a.clipCoef;
    m[i] = a.beta1 * a.m[i]! + (1 - a.beta1) * g;
    v[i] = a.beta2 * a.v[i]! + (1 - a.beta2) * g * g;
    const base = a.decay ? a.p[i]! * (1 - a.lr * a.weightDecay) : a.p[i]!;
    const denom = Math.sqrt(v[i]!) / Math.sqrt(bc2) + a.eps;
    p[i] = base - (a.lr / bc1) * (m[i]! / denom);
  }
  return { p, m, v };
}

function maxRelDiff(a: FloatArray, b: FloatArray): number {
  let worst = 0;
  for (let i = 0; i < a.length; i++)
    worst = Math.max(worst, Math.abs(a[i]! - b[i]!) / Math.max(1e-12, Math.abs(b[i]!)));
  return worst;
}

describe('TrainStep', () => {
  it(
    'applies AdamW (bias correction, decoupled decay on matrices only, global-norm clipping) exactly ' +
      'as the TS reference',
    async () => {
      const adamw = { maxGradNorm: 0.05, weightDecay: 0.1, beta1: 0.8, beta2: 0.95, eps: 1e-6 };
      const step = await TrainStep.create({ spec, dtype: 'float64', seed: 11, adamw, intraOpNumThreads: 1 });
      const hp = resolveAdamW(adamw);
      let clipped = 0;
      for (const [i, lr] of [
        [1, 0.01],
        [2, 0.005],
        [3, 0.02],
      ] as const) {
        const batch = makeSyntheticBatch({ spec, batchSize: 2, seed: i });
        const before = step.getState();
        const { grads, gradNorm } = await step.gradients(batch);
        const r = await step.run(batch, { lr });
        expect(r.step).toBe(i);
        expect(r.gradNorm).toBeCloseTo(gradNorm, 12);
        const clipCoef = Math.min(1, hp.maxGradNorm / (gradNorm + 1e-6));
        if (clipCoef < 1) clipped++;
        const after = step.getState();
        for (const p of step.model.params) {
          const ref = adamwReference({
            p: before.parameters.get(p.name)!,
            g: grads.get(p.name)!,
            m: before.m.get(p.name)!,
            v: before.v.get(p.name)!,
            step: i,
            lr,
            clipCoef,
            decay: p.weightDecay,
            ...hp,
          });
          expect(maxRelDiff(after.parameters.get(p.name)!, ref.p), p.name).toBeLessThan(1e-12);
          expect(maxRelDiff(after.m.get(p.name)!, ref.m), p.name).toBeLessThan(1e-12);
          expect(maxRelDiff(after.v.get(p.name)!, ref.v), p.name).toBeLessThan(1e-12);
        }
      }
      expect(clipped).toBeGreaterThan(0);
      const decayed = step.model.params.filter((p) => p.weightDecay).map((p) => p.name);
      expect(decayed).toContain('h.0.attn.c_attn.weight');
      expect(
        decayed.some((n) => n.includes('ln_') || n.startsWith('wte') || n.startsWith('wpe') || n.endsWith('.bias')),
      ).toBe(false);
      await step.release();
    },
  );

  it('is deterministic with one intra-op thread and reports every step to `measure`', async () => {
    const seen: StepMeasurement[] = [];
    const a = await TrainStep.create({ spec, seed: 4, intraOpNumThreads: 1, measure: (m) => seen.push(m) });
    const b = await TrainStep.create({ spec, seed: 4, intraOpNumThreads: 1 });
    for (let i = 0; i < 3; i++) {
      const batch = makeSyntheticBatch({ spec, batchSize: 3, seed: 100 + i });
      const ra = await a.run(batch);
      const rb = await b.run(batch);
      expect(ra.loss).toBe(rb.loss);
      expect(Number.isFinite(ra.loss)).toBe(true);
    }
    const pa = a.getParameters();
    for (const [name, arr] of b.getParameters())
      expect(Buffer.from(arr.buffer).equals(Buffer.from(pa.get(name)!.buffer))).toBe(true);
    expect(seen.map((m) => m.step)).toEqual([1, 2, 3]);
    expect(seen.every((m) => m.tokens === 3 * spec.seqLen && m.runMs > 0 && m.totalMs >= m.runMs)).toBe(true);
    await a.release();
    await b.release();
  });

  it('runs any batch size through the same session (the batch dimension is dynamic)', async () => {
    const step = await TrainStep.create({ spec, seed: 1, intraOpNumThreads: 1 });
    for (const batchSize of [1, 5, 2]) {
      const r = await step.run(makeSyntheticBatch({ spec, batchSize }));
      expect(r.tokens).toBe(batchSize * spec.seqLen);
      expect(Number.isFinite(r.gradNorm)).toBe(true);
    }
    await step.release();
  });

  it('restores a saved state and refuses tensors of the wrong size or dtype', async () => {
    const step = await TrainStep.create({ spec, seed: 2, intraOpNumThreads: 1 });
    const s0 = step.getState();
    await step.run(makeSyntheticBatch({ spec, batchSize: 2 }));
    expect(step.step).toBe(1);
    step.setState(s0);
    expect(step.step).toBe(0);
    expect(
      Buffer.from(step.getParameters().get('wte.weight')!.buffer).equals(
        Buffer.from(s0.parameters.get('wte.weight')!.buffer),
      ),
    ).toBe(true);
    const wrongSize = new Map(s0.parameters);
    wrongSize.set('wpe.weight', new Float32Array(3));
    expect(() => step.setState({ parameters: wrongSize })).toThrow(/wpe\.weight has 3 values/);
    const wrongType = new Map<string, FloatArray>(s0.parameters);
    wrongType.set('wpe.weight', new Float64Array(spec.seqLen * spec.dModel));
    expect(() => step.setState({ parameters: wrongType })).toThrow(/must be a Float32Array/);
    await step.release();
  });

  it('refuses malformed batches with the field and the fix', async () => {
    const step = await TrainStep.create({ spec, seed: 2, intraOpNumThreads: 1 });
    const ok = makeSyntheticBatch({ spec, batchSize: 2 });
    await expect(step.run({ ...ok, batchSize: 3 })).rejects.toThrow(/batchSize × seqLen = 3 × 6 = 18/);
    const bad = { ...ok, labels: ok.labels.slice() };
    bad.labels[4] = 13n;
    await expect(step.run(bad)).rejects.toThrow(TrainInputError);
    await expect(step.run(bad)).rejects.toThrow(/labels\[4\] = 13 is outside the vocabulary \[0, 13\)/);
    await expect(step.run(ok, { lr: Number.NaN })).rejects.toThrow(/lr must be a finite number/);
    await step.release();
  });

  const bindingDir = dirname(createRequire(import.meta.url).resolve('onnxruntime-node/package.json'));
  const cudaInstalled = existsSync(join(bindingDir, 'bin/napi-v6/linux/x64/libonnxruntime_providers_cuda.so'));
  it.skipIf(cudaInstalled)('names the install command when the CUDA provider is missing', async () => {
    const err = await TrainStep.create({ spec, executionProvider: 'cuda', deviceId: 0 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ExecutionProviderError);
    expect((err as ExecutionProviderError).code).toBe('SOUP_ONNX_TRAIN_EP_UNAVAILABLE');
    expect((err as Error).message).toContain(
      'ONNXRUNTIME_NODE_INSTALL=cuda12 node node_modules/onnxruntime-node/script/install',
    );
  });
});
