import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { useTempDir } from '@soup/test-utils';
import ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { buildTrainingModel, normalizeRecompute } from './build-training-model';
import { GptSpecError } from './errors';
import { defineGptSpec, type GptSpec } from './gpt-spec';
import { initParameters, type FloatArray } from './init-parameters';
import { makeSyntheticBatch } from './make-synthetic-batch';
import { parameterSpecs } from './parameter-specs';
import { tensorNames } from './tensor-names';
import { TrainStep } from './train-step';

const tiny = (over: Partial<GptSpec> = {}): GptSpec =>
  defineGptSpec({ vocabSize: 11, seqLen: 5, dModel: 8, nHeads: 2, nLayers: 2, dFF: 12, ...over });

describe('buildTrainingModel', () => {
  it('emits an opset-18 model ORT loads, with a dynamic batch and one input/output per state tensor', async () => {
    const spec = tiny({ tieEmbeddings: false });
    const model = buildTrainingModel({ spec });
    const session = await ort.InferenceSession.create(model.bytes);
    const params = parameterSpecs(spec);
    expect(session.inputNames).toEqual([
      'input_ids',
      'labels',
      'lr',
      'step',
      ...params.map((p) => p.name),
      ...params.map((p) => tensorNames.adamM(p.name)),
      ...params.map((p) => tensorNames.adamV(p.name)),
    ]);
    expect(session.outputNames.slice(0, 2)).toEqual(['loss', 'grad_norm']);
    expect(session.outputNames).toHaveLength(2 + 3 * params.length);
    const ids = session.inputMetadata.find((m) => m.name === 'input_ids');
    expect(ids?.isTensor ? ids.shape : null).toEqual(['batch', spec.seqLen]);
    expect(params.some((p) => p.name === 'lm_head.weight')).toBe(true);
    await session.release();
  });

  it('builds the loss-only and gradients graphs with the outputs they promise', async () => {
    const spec = tiny();
    const loss = await ort.InferenceSession.create(buildTrainingModel({ spec, mode: 'loss' }).bytes);
    expect(loss.outputNames).toEqual(['loss']);
    const grads = buildTrainingModel({ spec, mode: 'gradients' });
    expect(grads.outputNames).toEqual([
      'loss',
      'grad_norm',
      ...parameterSpecs(spec).map((p) => tensorNames.grad(p.name)),
    ]);
    await loss.release();
  });

  it('refuses unknown recompute names, naming the allowed forms', () => {
    const spec = tiny();
    expect(() => buildTrainingModel({ spec, recompute: ['h.2'] })).toThrow(GptSpecError);
    expect(() => buildTrainingModel({ spec, recompute: ['wte'] })).toThrow(
      /h\.<i>, h\.<i>\.attn, h\.<i>\.attn\.core \(attention core only\) or h\.<i>\.mlp/,
    );
    expect(normalizeRecompute(spec, ['h.1.attn', 'h.0', 'h.0.mlp', 'h.1.mlp'])).toEqual(['h.0', 'h.1.attn', 'h.1.mlp']);
    // the whole attention module covers its core; a block covers both
    expect(normalizeRecompute(spec, ['h.1.attn.core', 'h.1.attn', 'h.0', 'h.0.attn.core'])).toEqual([
      'h.0',
      'h.1.attn',
    ]);
    expect(normalizeRecompute(spec, ['h.1.mlp', 'h.1.attn.core'])).toEqual(['h.1.attn.core', 'h.1.mlp']);
  });
});

/** Central finite differences of the float64 loss at sampled coordinates of every parameter tensor. */
async function gradientCheck(spec: GptSpec): Promise<{ worst: number; checked: number; tensors: number }> {
  const params = initParameters({ spec, seed: 7, dtype: 'float64', stdScale: 10 });
  let k = 0;
  // Move LayerNorm gains and all biases off their 1/0 init so their gradients are generic.
  for (const [name, a] of params) {
    if (name.endsWith('.bias') || name.includes('ln_'))
      for (let i = 0; i < a.length; i++) a[i] = a[i]! + 0.1 * Math.sin(++k);
  }
  const step = await TrainStep.create({ spec, dtype: 'float64', parameters: params, intraOpNumThreads: 1 });
  const batch = makeSyntheticBatch({ spec, batchSize: 3, seed: 5 });
  const { grads } = await step.gradients(batch);
  const h = 1e-5;
  let worst = 0;
  let checked = 0;
  for (const [name, g] of grads) {
    const base = params.get(name)!;
    const coords = [0, Math.floor(base.length / 3), Math.floor((2 * base.length) / 3), base.length - 1];
    for (const i of coords) {
      const at = async (delta: number): Promise<number> => {
        const p = new Map<string, FloatArray>(params);
        const moved = base.slice();
        moved[i] = moved[i]! + delta;
        p.set(name, moved);
        step.setState({ parameters: p });
        return step.evaluate(batch);
      };
      const numeric = ((await at(h)) - (await at(-h))) / (2 * h);
      const analytic = g[i]!;
      const rel = Math.abs(numeric - analytic) / Math.max(Math.abs(numeric), Math.abs(analytic), 1e-8);
      worst = Math.max(worst, rel);
      checked++;
    }
  }
  await step.release();
  return { worst, checked, tensors: grads.size };
}

describe('gradients (float64 build of the same graph vs central finite differences)', () => {
  it('match with tied embeddings: relative error ≤ 1e-5 at sampled coordinates of every tensor', async () => {
    const spec = tiny();
    const r = await gradientCheck(spec);
    expect(r.tensors).toBe(parameterSpecs(spec).length);
    expect(r.checked).toBe(4 * r.tensors);
    expect(r.worst).toBeLessThanOrEqual(1e-5);
  });

  it('match with an untied LM head', async () => {
    const r = await gradientCheck(tiny({ tieEmbeddings: false, nLayers: 1 }));
    expect(r.worst).toBeLessThanOrEqual(1e-5);
  });
});

describe('recompute', () => {
  const spec = tiny({ nLayers: 3 });
  const batch = makeSyntheticBatch({ spec, batchSize: 3, seed: 5 });
  const gradsOf = async (recompute: string[]): Promise<Map<string, FloatArray>> => {
    const step = await TrainStep.create({ spec, seed: 3, recompute, intraOpNumThreads: 1 });
    const { grads } = await step.gradients(batch);
    await step.release();
    return grads;
  };

  it('gives the same gradients as the plain graph for blocks, attention and MLP sub-blocks (≤ 1e-6)', async () => {
    const plain = await gradsOf([]);
    for (const set of [
      ['h.0', 'h.1', 'h.2'],
      ['h.0.attn', 'h.1.attn', 'h.2.attn'],
      ['h.1', 'h.0.mlp'],
      ['h.2.attn', 'h.2.mlp'],
      ['h.0.attn.core', 'h.1.attn.core', 'h.2.attn.core'],
    ]) {
      const other = await gradsOf(set);
      let maxDiff = 0;
      for (const [name, g] of plain) {
        const o = other.get(name)!;
        for (let i = 0; i < g.length; i++) maxDiff = Math.max(maxDiff, Math.abs(g[i]! - o[i]!));
      }
      expect(maxDiff, set.join(',')).toBeLessThanOrEqual(1e-6);
    }
  });

  it('survives ORT optimisation and runs inside the backward, after the forward is done', async () => {
    const dir = useTempDir();
    const step = await TrainStep.create({
      spec,
      seed: 3,
      recompute: ['h.1'],
      intraOpNumThreads: 1,
      profileFilePrefix: join(dir, 'prof'),
    });
    await step.run(batch);
    const file = step.endProfiling()!;
    const events = JSON.parse(readFileSync(file, 'utf8')) as { cat: string; name: string; ts: number }[];
    const nodes = events.filter((e) => e.cat === 'Node' && e.name.endsWith('_kernel_time'));
    const recompute = nodes.filter((e) => e.name.startsWith('h.1/bwd/recompute/'));
    const lastForward = Math.max(...nodes.filter((e) => /^(h\.\d|ln_f)\/fwd\//.test(e.name)).map((e) => e.ts));
    const firstBlock2Backward = Math.min(...nodes.filter((e) => e.name.startsWith('h.2/bwd/')).map((e) => e.ts));
    // the whole block forward is emitted again (LayerNorms, attention, MLP: dozens of nodes)
    expect(recompute.length).toBeGreaterThan(30);
    expect(Math.min(...recompute.map((e) => e.ts))).toBeGreaterThan(Math.max(lastForward, firstBlock2Backward));
    await step.release();
  });
});
