// soup probe through the real bin: a soup.yaml model, any ONNX model, any trainer command.
import { writeTrainingModel } from '@soup/onnx-train';
import { runNode, useTempDir } from '@soup/test-utils';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { assetPath } from './_assets';

const bin = fileURLToPath(new URL('../bin/soup.js', import.meta.url));
const MiB = 2 ** 20;

function soup(args: string[], cwd: string) {
  return runNode([bin, ...args], {
    cwd,
    timeoutMs: 180_000,
    env: { PATH: process.env.PATH, HOME: cwd, NO_COLOR: '1', SOUP_BATCH_CACHE_PATH: join(cwd, 'cache.json') },
  });
}

const tinyConfig = `base: soup/probe-gpt
model: {d_model: 32, n_heads: 2, n_layers: 1, d_ff: 64}
data: {train: ${assetPath('corpus/val.txt')}, max_length: 16}
training: {steps: 10, static_batch_size: 2}
`;

describe('[slow] soup probe', { timeout: 300_000 }, () => {
  it('probes a soup.yaml model with real steps, caches the answer, and --no-cache probes again', async () => {
    const cwd = useTempDir();
    writeFileSync(join(cwd, 'soup.yaml'), tinyConfig);
    const first = await soup(['probe', '--json'], cwd);
    expect(first.code, first.stderr).toBe(0);
    const r1 = JSON.parse(first.stdout) as {
      batch_size: number;
      source: string;
      cache_key: string;
      trials: { batch_size: number; result: string; peak_bytes: number; budget_bytes: number }[];
    };
    // Start 2, ceiling 4 × 2: a 1-layer model this small fits at every size, so the search ends at the ceiling.
    expect(r1).toMatchObject({ batch_size: 8, source: 'probe', grad_ckpt: 'off' });
    // Predictive: the budget over the first measured peak puts the edge past the ceiling, so the ceiling is tried next.
    expect(r1.trials.map((t) => [t.batch_size, t.result])).toEqual([
      [2, 'fit'],
      [8, 'fit'],
    ]);
    for (const t of r1.trials) expect(t.peak_bytes).toBeLessThanOrEqual(t.budget_bytes);
    expect(first.stderr).toMatch(/batch +8 +fits +peak .* \/ budget .*/);
    expect(JSON.parse(readFileSync(join(cwd, 'cache.json'), 'utf8'))).toEqual({ [r1.cache_key]: 8 });

    const plain = JSON.parse((await soup(['probe', '--no-predict', '--no-cache', '--json'], cwd)).stdout) as typeof r1;
    expect(plain.trials.map((t) => [t.batch_size, t.result])).toEqual([
      [2, 'fit'],
      [4, 'fit'],
      [8, 'fit'],
    ]); // doubling, as before
    const cached = JSON.parse((await soup(['probe', '--json'], cwd)).stdout) as typeof r1;
    expect(cached).toMatchObject({ batch_size: 8, source: 'cache', trials: [] });

    const budget = await soup(['probe', '--no-cache', '--budget', '1B', '--json'], cwd);
    expect(budget.code).toBe(7); // nothing fits one byte: exit 7, one line
    expect(budget.stderr.trim().split('\n').pop()).toMatch(/^soup: out of memory at batch size 1/);
    // The advice names only what soup can change here, never FSDP / DeepSpeed / 4-bit; on a CPU not offload to host
    // RAM.
    expect(budget.stderr).toMatch(
      /What soup can change here: a stronger checkpointing tier \(training\.gradient_checkpointing: .*\), activation offload to scratch files \(training\.activation_offloading: disk\), a shorter data\.max_length \(now 16\) or a bigger --budget than 1 B\./,
    );
    expect(budget.stderr).not.toMatch(/FSDP|DeepSpeed|4-bit/);
  });

  it('probes any trainer command: {batch_size} replaced, peak RSS against the budget', async () => {
    const cwd = useTempDir();
    // A "trainer" that holds batch_size × 32 MiB for a moment.
    writeFileSync(
      join(cwd, 'alloc.mjs'),
      `const b = Buffer.alloc(Number(process.argv[2]) * 32 * 1024 * 1024, 1);\nsetTimeout(() => ` +
        `console.log(b.length), 300);\n`,
    );
    const r = await soup(
      [
        'probe',
        '--exec',
        `${process.execPath} alloc.mjs {batch_size}`,
        '--budget',
        '420MiB',
        '--start',
        '4',
        '--ceiling',
        '64',
        '--no-cache',
        '--json',
      ],
      cwd,
    );
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as {
      batch_size: number;
      trials: { batch_size: number; result: string; peak_bytes: number }[];
    };
    // ~40 MiB of Node itself + 32 MiB per unit under 420 MiB: 11 fits, 12 does not (±1 for the runtime's size).
    expect(out.batch_size).toBeGreaterThanOrEqual(10);
    expect(out.batch_size).toBeLessThanOrEqual(12);
    const fit = out.trials.find((t) => t.batch_size === out.batch_size && t.result === 'fit');
    expect(fit!.peak_bytes).toBeGreaterThan(out.batch_size * 32 * MiB);
    expect(fit!.peak_bytes).toBeLessThanOrEqual(420 * MiB);
    expect(out.trials.some((t) => t.batch_size === out.batch_size + 1 && t.result !== 'fit')).toBe(true);
    expect(existsSync(join(cwd, 'cache.json'))).toBe(false);
  });

  it('probes any ONNX model with a synthetic batch', async () => {
    const cwd = useTempDir();
    const model = join(cwd, 'model.onnx');
    writeTrainingModel(
      { vocabSize: 256, seqLen: 16, dModel: 32, nHeads: 2, nLayers: 1, dFF: 64, tieEmbeddings: true },
      model,
    );
    const r = await soup(
      [
        'probe',
        '--model',
        'model.onnx',
        '--max-length',
        '16',
        '--vocab-size',
        '256',
        '--start',
        '1',
        '--ceiling',
        '4',
        '--json',
      ],
      cwd,
    );
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as {
      batch_size: number;
      source: string;
      trials: { result: string; peak_bytes: number }[];
    };
    expect(out).toMatchObject({ batch_size: 4, source: 'probe' });
    expect(out.trials).toHaveLength(2); // 1, then the predicted edge clamped to the ceiling
    expect(out.trials.every((t) => t.result === 'fit' && t.peak_bytes > 0)).toBe(true);
  });

  it('refuses conflicting sources and a command without {batch_size}', async () => {
    const cwd = useTempDir();
    const both = await soup(['probe', '--model', 'a.onnx', '--exec', 'x {batch_size}'], cwd);
    expect(both.code).toBe(2);
    expect(both.stderr).toBe('soup: pass one of -c/--config, --model, --exec (got --model and --exec)\n');
    const noSlot = await soup(['probe', '--exec', 'python train.py'], cwd);
    expect(noSlot.code).toBe(2);
    expect(noSlot.stderr).toContain('--exec needs {batch_size} in the command');
  });
});
