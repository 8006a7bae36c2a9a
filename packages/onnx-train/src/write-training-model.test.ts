import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { useTempDir } from '@soup/test-utils';
import ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { defineGptSpec } from './gpt-spec';
import { initParameters } from './init-parameters';
import { makeSyntheticBatch } from './make-synthetic-batch';
import { parameterSpecs } from './parameter-specs';
import { tensorNames } from './tensor-names';
import { writeTrainingModel } from './write-training-model';

const spec = defineGptSpec({ vocabSize: 32, seqLen: 8, dModel: 16, nHeads: 2, nLayers: 2 });

describe('writeTrainingModel', () => {
  it('writes a model file that a plain ORT session runs as one training step', async () => {
    const dir = useTempDir();
    const written = writeTrainingModel(spec, join(dir, 'nested', 'step.onnx'));
    expect(statSync(written.path).size).toBe(written.sizeBytes);
    expect(written.inputNames).toContain('adam_v.h.1.mlp.c_proj.weight');
    const session = await ort.InferenceSession.create(written.path);
    const batch = makeSyntheticBatch({ spec, batchSize: 3 });
    const params = initParameters({ spec, seed: 1 });
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor('int64', batch.inputIds, [3, spec.seqLen]),
      labels: new ort.Tensor('int64', batch.labels, [3, spec.seqLen]),
      lr: new ort.Tensor('float32', Float32Array.of(1e-3), []),
      step: new ort.Tensor('int64', BigInt64Array.of(1n), []),
    };
    for (const p of parameterSpecs(spec)) {
      const n = params.get(p.name)!.length;
      feeds[p.name] = new ort.Tensor('float32', params.get(p.name)!, p.shape);
      feeds[tensorNames.adamM(p.name)] = new ort.Tensor('float32', new Float32Array(n), p.shape);
      feeds[tensorNames.adamV(p.name)] = new ort.Tensor('float32', new Float32Array(n), p.shape);
    }
    const out = await session.run(feeds);
    expect(Number(out.loss!.data[0])).toBeCloseTo(Math.log(32), 1);
    const w0 = params.get('wte.weight')!;
    const w1 = out[tensorNames.updated('wte.weight')]!.data as Float32Array;
    // first AdamW step moves every coordinate with a non-zero gradient by ≈ lr
    const moved = w1.reduce((n, v, i) => n + (Math.abs(v - w0[i]!) > 5e-4 ? 1 : 0), 0);
    expect(moved).toBeGreaterThan(w0.length / 2);
    await session.release();
  });

  it('accepts the params-object form and build options', () => {
    const dir = useTempDir();
    const w = writeTrainingModel({ spec, path: join(dir, 'eval.onnx'), mode: 'loss', dtype: 'float64' });
    expect(w.outputNames).toEqual(['loss']);
    expect(readFileSync(w.path).length).toBe(w.sizeBytes);
  });
});
