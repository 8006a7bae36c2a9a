// The model in the formats others load: a checkpoint's config.json + model.safetensors (GPT-2 names,
// Conv1D [in, out] weights) drive a plain PyTorch GPT-2 built from config.json alone, and in float64
// the full gradient and AdamW steps match torch's. Skipped, with the reason printed, where
// `<python> -c "import torch"` fails; the Node twins are the finite-difference check
// (build-training-model.test.ts), the AdamW TS reference (train-step.test.ts) and the TypeScript
// GPT-2 below, which always runs.
import { runProcess, useTempDir, torchMissing } from '@soup/test-utils';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { resolveAdamW } from './adamw-options';
import { defineGptSpec, type GptSpec } from './gpt-spec';
import { gpt2Config } from './gpt2-config';
import { makeSyntheticBatch, type TrainBatch } from './make-synthetic-batch';
import { parameterSpecs } from './parameter-specs';
import { gpt2LossFromFolder } from './_gpt2-reference';
import { TrainStep } from './train-step';
import { Trainer } from './trainer';
import { writeSafetensors } from './write-safetensors';

const python = process.env.PYTHON ?? '/usr/bin/python3';
const script = fileURLToPath(new URL('./__fixtures__/gpt2_from_config.py', import.meta.url));
const corpusFile = fileURLToPath(new URL('./__fixtures__/soup.txt', import.meta.url));
const noTorch = torchMissing(python);
if (noTorch) console.log(`skipping the PyTorch cross-checks: ${noTorch}`);

const batchJson = (b: TrainBatch, T: number): string => {
  const rows = (a: BigInt64Array): number[][] =>
    Array.from({ length: b.batchSize }, (_, i) => Array.from(a.subarray(i * T, (i + 1) * T), Number));
  return JSON.stringify({ input_ids: rows(b.inputIds), labels: rows(b.labels) });
};

/** max |a − b| / max(|b|) over a tensor: 0 for equal tensors. */
function relErr(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let diff = 0;
  let scale = 1e-30;
  for (let i = 0; i < a.length; i++) {
    diff = Math.max(diff, Math.abs(a[i]! - b[i]!));
    scale = Math.max(scale, Math.abs(b[i]!));
  }
  return diff / scale;
}

async function trainedFolder(spec: GptSpec): Promise<{ dir: string; trainer: Trainer }> {
  const dir = join(useTempDir(), 'final');
  const trainer = await Trainer.create({
    spec,
    files: [corpusFile],
    batchSize: 4,
    totalSteps: 6,
    lr: 3e-3,
    seed: 3,
    intraOpNumThreads: 1,
  });
  for (let i = 0; i < 6; i++) await trainer.step();
  trainer.saveCheckpoint(dir);
  return { dir, trainer };
}

describe('a checkpoint loads outside soup as GPT-2', () => {
  for (const tie of [true, false]) {
    const spec = defineGptSpec({
      vocabSize: 256,
      seqLen: 16,
      dModel: 16,
      nHeads: 2,
      nLayers: 2,
      dFF: 48,
      tieEmbeddings: tie,
    });

    it(
      `config.json is a GPT2Config (tie_word_embeddings ${tie}); a TypeScript GPT-2 from it ` +
        `reproduces the loss (Node twin)`,
      async () => {
        const { dir, trainer } = await trainedFolder(spec);
        const cfg = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
        expect(cfg).toMatchObject({
          model_type: 'gpt2',
          architectures: ['GPT2LMHeadModel'],
          vocab_size: 256,
          n_positions: 16,
          n_embd: 16,
          n_layer: 2,
          n_head: 2,
          n_inner: 48,
        });
        expect(cfg).toMatchObject({
          activation_function: 'gelu_new',
          layer_norm_epsilon: 1e-5,
          tie_word_embeddings: tie,
          resid_pdrop: 0,
          embd_pdrop: 0,
          attn_pdrop: 0,
        });
        expect(JSON.parse(readFileSync(join(dir, 'generation_config.json'), 'utf8'))).toMatchObject({ max_length: 16 });
        const batch = makeSyntheticBatch({ spec, batchSize: 3, seed: 9 });
        const soupLoss = await trainer.trainStep.evaluate(batch);
        expect(Math.abs(gpt2LossFromFolder(dir, batch) - soupLoss)).toBeLessThan(1e-4);
        await trainer.close();
      },
    );

    it.skipIf(noTorch !== null)(
      `PyTorch GPT-2 built from config.json alone reproduces soup's loss to 1e-4 (tie ${tie})`,
      async () => {
        const { dir, trainer } = await trainedFolder(spec);
        const batch = makeSyntheticBatch({ spec, batchSize: 3, seed: 9 });
        writeFileSync(join(dir, 'batch.json'), batchJson(batch, spec.seqLen));
        const soupLoss = await trainer.trainStep.evaluate(batch);
        await trainer.close();
        const r = await runProcess(python, [script, 'loss', dir, join(dir, 'batch.json')], { timeoutMs: 120_000 });
        expect(r.code, r.stderr).toBe(0);
        const torchLoss = (JSON.parse(r.stdout) as { loss: number }).loss;
        expect(Math.abs(torchLoss - soupLoss)).toBeLessThan(1e-4);
      },
    );
  }
});

describe.skipIf(noTorch !== null)('float64: the full gradient and AdamW steps match torch', () => {
  it(
    'every coordinate of every gradient tensor, then two clipped AdamW steps: parameters and both ' + 'moments',
    async () => {
      const spec = defineGptSpec({
        vocabSize: 13,
        seqLen: 6,
        dModel: 8,
        nHeads: 2,
        nLayers: 2,
        dFF: 16,
        tieEmbeddings: false,
      });
      const adamw = { maxGradNorm: 0.5, weightDecay: 0.1, beta1: 0.8, beta2: 0.95, eps: 1e-6 };
      const step = await TrainStep.create({ spec, dtype: 'float64', seed: 5, adamw, intraOpNumThreads: 1 });
      const dir = useTempDir();
      const params = parameterSpecs(spec);
      const state = step.getState();
      writeFileSync(join(dir, 'config.json'), JSON.stringify(gpt2Config(spec, 'float64')));
      writeSafetensors({
        path: join(dir, 'model.safetensors'),
        tensors: params.map((p) => [p.name, { dtype: 'F64', shape: p.shape, data: state.parameters.get(p.name)! }]),
      });
      const batch = makeSyntheticBatch({ spec, batchSize: 3, seed: 2 });
      writeFileSync(join(dir, 'batch.json'), batchJson(batch, spec.seqLen));
      const lrs = [0.01, 0.005];
      const hp = resolveAdamW(adamw);
      const out = join(dir, 'torch.json');
      writeFileSync(
        join(dir, 'opts.json'),
        JSON.stringify({
          out,
          lrs,
          decay: params.filter((p) => p.weightDecay).map((p) => p.name),
          weight_decay: hp.weightDecay,
          beta1: hp.beta1,
          beta2: hp.beta2,
          eps: hp.eps,
          max_grad_norm: hp.maxGradNorm,
        }),
      );
      const r = await runProcess(python, [script, 'step', dir, join(dir, 'batch.json'), join(dir, 'opts.json')], {
        timeoutMs: 120_000,
      });
      expect(r.code, r.stderr).toBe(0);
      const torch = JSON.parse(readFileSync(out, 'utf8')) as {
        loss: number;
        grad_norm: number;
        grads: Record<string, number[]>;
        params: Record<string, number[]>;
        m: Record<string, number[]>;
        v: Record<string, number[]>;
        step_losses: number[];
      };

      const g = await step.gradients(batch);
      expect(Math.abs(g.loss - torch.loss)).toBeLessThan(1e-12);
      expect(Math.abs(g.gradNorm - torch.grad_norm) / torch.grad_norm).toBeLessThan(1e-10);
      expect(torch.grad_norm).toBeGreaterThan(hp.maxGradNorm); // clipping is exercised
      for (const p of params)
        expect(relErr(g.grads.get(p.name)!, torch.grads[p.name]!), `grad ${p.name}`).toBeLessThan(1e-9);

      const losses: number[] = [];
      for (const lr of lrs) losses.push((await step.run(batch, { lr })).loss);
      // Both sides' losses are real numbers (expect.any(Number) would accept NaN), one per learning rate.
      expect(losses).toHaveLength(lrs.length);
      expect(torch.step_losses).toHaveLength(lrs.length);
      for (const l of [...losses, ...torch.step_losses]) expect(Number.isFinite(l) && l > 0, `loss ${l}`).toBe(true);
      for (let i = 0; i < lrs.length; i++) expect(Math.abs(losses[i]! - torch.step_losses[i]!)).toBeLessThan(1e-12);
      const after = step.getState();
      for (const p of params) {
        expect(relErr(after.parameters.get(p.name)!, torch.params[p.name]!), `param ${p.name}`).toBeLessThan(1e-9);
        expect(relErr(after.m.get(p.name)!, torch.m[p.name]!), `adam m ${p.name}`).toBeLessThan(1e-9);
        expect(relErr(after.v.get(p.name)!, torch.v[p.name]!), `adam v ${p.name}`).toBeLessThan(1e-9);
      }
      await step.release();
    },
  );
});
