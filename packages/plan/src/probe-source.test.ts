import { useTempDir } from '@soup/test-utils';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PlanUsageError } from './errors';
import { type ProbeSourceOptions, probeSource } from './probe-source';

const yaml = `base: soup/tiny-gpt
data:
  train: data/train.txt
  max_length: 32
training:
  steps: 10
  batch_size: 8
  static_batch_size: 3
  memory_budget: 64MiB
`;

/** soup probe's flags with nothing given, in a fresh folder (the batch cache in it). */
function flags(cwd: string, o: Partial<ProbeSourceOptions> = {}): ProbeSourceOptions {
  const env = { HOME: cwd, SOUP_BATCH_CACHE_PATH: join(cwd, 'cache.json') };
  const signal = new AbortController().signal;
  const search = { refresh: false, noCache: false, cacheExceptionsOnly: false, predict: true };
  return { env, cwd, signal, vocabSize: 32000, timeoutMs: 60_000, steps: {}, ...search, ...o };
}

/** A soup.yaml (and its training data) in `cwd`. */
function writeConfig(cwd: string, text = yaml): void {
  mkdirSync(join(cwd, 'data'), { recursive: true });
  writeFileSync(join(cwd, 'data', 'train.txt'), 'hello world\n'.repeat(20));
  writeFileSync(join(cwd, 'soup.yaml'), text);
}

/** The PlanUsageError message `o` is refused with. */
async function refusal(cwd: string, o: Partial<ProbeSourceOptions>): Promise<string> {
  const err = await probeSource(flags(cwd, o)).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(PlanUsageError);
  expect((err as PlanUsageError).code).toBe('SOUP_PLAN_USAGE');
  return (err as PlanUsageError).message;
}

describe('probeSource: which of soup probe sources, its refusals and defaults', () => {
  it('refuses, in the words of the flags: two sources, --try without --exec, a ceiling below the start', async () => {
    const cwd = useTempDir();
    writeConfig(cwd);
    expect(await refusal(cwd, { model: 'a.onnx', exec: 'x {batch_size}' })).toBe(
      'pass one of -c/--config, --model, --exec (got --model and --exec)',
    );
    expect(await refusal(cwd, { tries: ['a=1,2'] })).toMatch(/^--try applies to soup probe --exec/);
    expect(await refusal(cwd, { timeSteps: 4 })).toMatch(/^--time-steps applies to soup probe --exec/);
    expect(await refusal(cwd, { start: 8, ceiling: 4 })).toBe(
      '--ceiling 4 is below the start 8; pass --ceiling >= --start',
    );
    expect(await refusal(cwd, { globalBatchSize: 8 })).toMatch(/^--global-batch-size applies to soup probe --exec/);
  });

  it('refuses an unreadable --model, an --exec without {batch_size}, and the budget tier', async () => {
    const cwd = useTempDir();
    expect(await refusal(cwd, { model: 'missing.onnx' })).toBe('--model missing.onnx: cannot read it (ENOENT)');
    expect(await refusal(cwd, { exec: 'python train.py' })).toMatch(/^--exec needs \{batch_size\} in the command/);
    writeConfig(cwd, yaml.replace('  memory_budget', '  gradient_checkpointing: budget\n  memory_budget'));
    expect(await refusal(cwd, {})).toMatch(/^soup probe measures fixed tiers; for gradient_checkpointing: budget/);
  });

  it('soup.yaml: start static_batch_size, ceiling 4 × start, the budget and max_length of the config', async () => {
    const cwd = useTempDir();
    writeConfig(cwd);
    const s = await probeSource(flags(cwd));
    if (s.kind !== 'search') throw new Error('expected a search');
    expect(s.mode).toBe('config');
    expect(s.micro).toBeNull();
    expect(s.line).toMatch(
      /^probing soup\/tiny-gpt \(\d+ layers?, d_model \d+, max_length 32\), checkpointing .+ on cpu \([\d.]+ GiB\), budget 64\.0 MiB: batch 3 up to 12$/,
    );
    // The flags win over the config.
    const flagged = await probeSource(flags(cwd, { budgetBytes: 32 * 2 ** 20, start: 2, ceiling: 5 }));
    expect(flagged.kind === 'search' && flagged.line).toMatch(/, budget 32\.0 MiB: batch 2 up to 5$/);
    expect(await s.change()).toBeNull();
  });

  it('--exec with a global batch: the micro-batch G / N, the command masked; --try: the tuning', async () => {
    const cwd = useTempDir();
    const exec = 'node train.js --bs {micro_batch_size} --accum {grad_accum} --token hf_abcdefghijklmnop';
    const s = await probeSource(flags(cwd, { exec, globalBatchSize: 12, worldSize: 2 }));
    if (s.kind !== 'search') throw new Error('expected a search');
    expect(s.micro).toMatchObject({ globalBatchSize: 12, worldSize: 2, perRank: 6 });
    expect(s.line).toMatch(/^probing `node train\.js .*` on cpu \([\d.]+ GiB\): batch 6 up to 6$/);
    expect(s.line).not.toContain('hf_abcdefghijklmnop');
    const tuned = await probeSource(
      flags(cwd, {
        exec: 'node t.js {micro_batch_size} {probe_steps} {ckpt}',
        globalBatchSize: 4,
        tries: ['ckpt=a,b'],
      }),
    );
    expect(tuned.kind).toBe('tune');
    if (tuned.kind === 'tune') expect(tuned.tune).toMatchObject({ globalBatchSize: 4, worldSize: 1, refresh: false });
  });
});
