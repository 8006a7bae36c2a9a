import { describe, expect, it } from 'vitest';
import { validateConfig } from './validate-config';

const file = '/proj/soup.yaml';
const minimal = `base: soup/tiny-gpt
data:
  train: data/train.txt
  max_length: 64
training:
  steps: 10
`;

describe('validateConfig', () => {
  it('hub.squash_history and hub.lease_ttl: read as given; a lease TTL under 1 s names the field', () => {
    const ok = validateConfig({
      text: `${minimal}hub:\n  squash_history: true\n  lease_ttl: 90s\n  keep_remote: null\n`,
      file,
      cwd: '/work',
    });
    expect(ok.errors).toEqual([]);
    expect(ok.config?.hub).toMatchObject({ squashHistory: true, leaseTtlMs: 90_000, keepRemote: null });
    const bad = validateConfig({ text: `${minimal}hub:\n  lease_ttl: 200ms\n`, file, cwd: '/work' });
    expect(bad.errors.map((e) => e.path)).toContain('hub.lease_ttl');
  });

  it('hub.min_commit_interval and squash_history auto/false: read as given; a bad interval names the field', () => {
    const ok = validateConfig({
      text: `${minimal}hub:\n  squash_history: false\n  min_commit_interval: 90s\n`,
      file,
      cwd: '/work',
    });
    expect(ok.errors).toEqual([]);
    expect(ok.config?.hub).toMatchObject({ squashHistory: false, minCommitIntervalMs: 90_000 });
    const zero = validateConfig({
      text: `${minimal}hub:\n  squash_history: auto\n  min_commit_interval: 0\n`,
      file,
      cwd: '/work',
    });
    expect(zero.config?.hub).toMatchObject({ squashHistory: 'auto', minCommitIntervalMs: 0 });
    const bad = validateConfig({ text: `${minimal}hub:\n  min_commit_interval: soon\n`, file, cwd: '/work' });
    expect(bad.errors.map((e) => e.path)).toContain('hub.min_commit_interval');
  });

  it('fills every default and resolves paths', () => {
    const r = validateConfig({ text: minimal, file, cwd: '/work' });
    expect(r.errors).toEqual([]);
    expect(r.config).toMatchObject({
      base: 'soup/tiny-gpt',
      model: { vocabSize: 256, dModel: 64, nHeads: 4, nLayers: 2, dFF: 256, tieEmbeddings: true },
      data: { trainPath: '/proj/data/train.txt', valPath: null, maxLength: 64 },
      training: {
        steps: 10,
        batchSize: 16,
        microBatchSize: 'auto',
        memoryHeadroom: 0,
        autoBatchSizeStrategy: 'auto',
        staticBatchSize: 8,
        gradientCheckpointing: false,
        activationOffloading: null,
        quantization: 'none',
        loraR: 0,
        memoryBudgetBytes: null,
      },
      device: { kind: 'cpu', id: 0 },
      hub: {
        repo: null,
        repoType: 'model',
        private: true,
        keepLocal: 1,
        keepRemote: 3,
        squashHistory: 'auto',
      },
      output: '/work/soup-output',
    });
  });

  it('accepts the Python Soup field names with their values', () => {
    const text = `${minimal}  batch_size: 16
  auto_batch_size_strategy: probe
  gradient_checkpointing: medium
  activation_offloading: disk
  activation_offloading_dir: scratch
  quantization: 4bit
  lora:
    r: 16
  lr: 0.0002
  memory_budget: 6GiB
device: cuda:1
hub:
  repo: me/run-ckpt
  push_every_steps: 5
output: out
`;
    const r = validateConfig({ text, file, cwd: '/work' });
    expect(r.errors).toEqual([]);
    expect(r.config?.training).toMatchObject({
      batchSize: 16,
      gradientCheckpointing: 'medium',
      activationOffloading: 'disk',
      activationOffloadingDir: '/work/scratch',
      quantization: '4bit',
      loraR: 16,
      lr: 0.0002,
      memoryBudgetBytes: 6 * 2 ** 30,
    });
    expect(r.config?.device).toEqual({ kind: 'cuda', id: 1, spec: 'cuda:1' });
    expect(r.config?.hub).toMatchObject({ repo: 'me/run-ckpt', pushEverySteps: 5 });
    // quantization and lora are cache-key fields only: a warning names them.
    expect(r.warnings.map((w) => w.path)).toContain('training.quantization');
  });

  it('names the path, the line and what is allowed for a bad value', () => {
    const r = validateConfig({ text: minimal.replace('steps: 10', 'steps: 10\n  batch_size: big'), file });
    expect(r.config).toBeNull();
    expect(r.errors).toEqual([
      {
        path: 'training.batch_size',
        line: 7,
        col: 15,
        message:
          'must be an integer from 1 to 65536 (the global batch G; the probe sizes micro_batch_size) (got "big")',
      },
    ]);
  });

  it('refuses the old batch_size: auto, showing the new form (G an integer, micro_batch_size: auto)', () => {
    const r = validateConfig({ text: minimal.replace('steps: 10', 'steps: 10\n  batch_size: auto'), file });
    expect(r.config).toBeNull();
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]).toMatchObject({ path: 'training.batch_size', line: 7, col: 15 });
    expect(r.errors[0]!.message).toMatch(/^auto is no longer a batch size: batch_size is now the global batch G/);
    expect(r.errors[0]!.message).toContain('batch_size: 32 ');
    expect(r.errors[0]!.message).toContain('micro_batch_size: auto ');
  });

  it('micro_batch_size must divide batch_size; memory_headroom takes 10% or 0.1', () => {
    const bad = validateConfig({ text: `${minimal}  batch_size: 24\n  micro_batch_size: 10\n`, file });
    expect(bad.errors).toEqual([
      {
        path: 'training.micro_batch_size',
        line: 8,
        col: 21,
        message: 'must divide batch_size (24), so that micro_batch_size × accumulation = batch_size; e.g. 8, or auto',
      },
    ]);
    const ok = validateConfig({
      text: `${minimal}  batch_size: 24\n  micro_batch_size: 8\n  memory_headroom: 10%\n`,
      file,
    });
    expect(ok.errors).toEqual([]);
    expect(ok.config?.training).toMatchObject({ batchSize: 24, microBatchSize: 8, memoryHeadroom: 0.1 });
    expect(validateConfig({ text: `${minimal}  memory_headroom: 0.25\n`, file }).config?.training.memoryHeadroom).toBe(
      0.25,
    );
    expect(validateConfig({ text: `${minimal}  memory_headroom: 100%\n`, file }).errors[0]).toMatchObject({
      path: 'training.memory_headroom',
      message: 'must be below 100% (got "100%")',
    });
  });

  it('suggests the closest field for an unknown key, in the same section or another', () => {
    const text = `${minimal}  bacth_size: 4\n  max_length: 32\ndevcie: cpu\n`;
    const r = validateConfig({ text, file });
    expect(r.errors).toEqual([
      { path: 'training.bacth_size', line: 7, col: 3, message: 'unknown field; did you mean "batch_size"?' },
      { path: 'training.max_length', line: 8, col: 3, message: 'unknown field; did you mean "data.max_length"?' },
      { path: 'devcie', line: 9, col: 1, message: 'unknown field; did you mean "device"?' },
    ]);
  });

  it('lists the allowed fields when nothing is close', () => {
    const r = validateConfig({ text: `${minimal}zzzzzzzz: 1\n`, file });
    expect(r.errors[0]?.message).toBe('unknown field; allowed here: base, model, data, training, device, hub, output');
  });

  it('reports enums with the allowed values and a suggestion', () => {
    const r = validateConfig({ text: `${minimal}  auto_batch_size_strategy: prob\n`, file });
    expect(r.errors[0]).toMatchObject({
      path: 'training.auto_batch_size_strategy',
      line: 7,
      message: 'must be one of "auto", "probe", "static" (got "prob"); did you mean "probe"?',
    });
  });

  it('reports a missing required field at its parent', () => {
    const r = validateConfig({ text: 'base: x\ndata:\n  train: a.txt\ntraining:\n  steps: 3\n', file });
    expect(r.errors).toEqual([
      { path: 'data.max_length', line: 2, col: 1, message: 'missing required field (an integer >= 8) under data' },
    ]);
  });

  it('checks what the schema cannot: heads divide the width, budget tier needs a budget', () => {
    const text =
      minimal.replace('steps: 10', 'steps: 10\n  gradient_checkpointing: budget') +
      'model:\n  d_model: 60\n  n_heads: 8\n';
    const r = validateConfig({ text, file });
    expect(r.errors.map((e) => [e.path, e.line])).toEqual([
      ['training.gradient_checkpointing', 7],
      ['model.n_heads', 10],
    ]);
    expect(r.errors[1]?.message).toMatch(/must divide model.d_model \(60 is not a multiple of 8\)/);
  });

  it('reports YAML syntax errors with their line', () => {
    const r = validateConfig({ text: 'base: soup\ndata: [\n', file });
    expect(r.errors[0]).toMatchObject({ path: '', line: 3 });
    expect(r.errors[0]?.message).toMatch(/^not valid YAML/);
  });

  it('rejects duplicate keys, an empty file and a non-mapping', () => {
    expect(validateConfig({ text: 'base: a\nbase: b\n', file }).errors[0]?.message).toMatch(
      /not valid YAML: Map keys must be unique/,
    );
    expect(validateConfig({ text: '', file }).errors[0]?.message).toMatch(/empty; run `soup init`/);
    expect(validateConfig({ text: '- 1\n', file }).errors[0]?.message).toMatch(/must be a mapping/);
  });

  it('refuses an absurd training.batch_size, naming the field and the maximum', () => {
    const r = validateConfig({ text: `${minimal}  batch_size: 1e12\n`, file });
    expect(r.config).toBeNull();
    expect(r.errors).toEqual([
      expect.objectContaining({
        path: 'training.batch_size',
        message: expect.stringMatching(/^must be an integer from 1 to 65536 .*\(got 1000000000000\)$/),
      }),
    ]);
    expect(validateConfig({ text: `${minimal}  batch_size: 65536\n`, file }).config?.training.batchSize).toBe(65536);
  });

  it('checks data files through the injected isFile', () => {
    const r = validateConfig({ text: `${minimal}data_extra: 1\n`, file, isFile: () => false });
    expect(r.errors).toHaveLength(1); // schema errors first; files are checked once the schema passes
    const r2 = validateConfig({ text: minimal, file, isFile: (p) => p !== '/proj/data/train.txt' });
    expect(r2.errors).toEqual([
      {
        path: 'data.train',
        line: 3,
        col: 10,
        message: "no such file: /proj/data/train.txt (paths are relative to soup.yaml's folder)",
      },
    ]);
  });
});
