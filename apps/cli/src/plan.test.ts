// soup plan and the init → train path, through the real bin.
import { runNode, useTempDir } from '@soup/test-utils';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { memoryKeysOf } from '../test/run-helpers';
import { EXIT_CODES } from './exit-codes';

const bin = fileURLToPath(new URL('../bin/soup.js', import.meta.url));

function soup(args: string[], cwd: string) {
  return runNode([bin, ...args], {
    cwd,
    timeoutMs: 180_000,
    env: { PATH: process.env.PATH, HOME: cwd, NO_COLOR: '1', SOUP_BATCH_CACHE_PATH: join(cwd, 'cache.json') },
  });
}

/** `soup init --template tiny`, shrunk so a test trains it in a second or two. */
async function initTiny(cwd: string, edit: (text: string) => string = (t) => t): Promise<void> {
  expect((await soup(['init'], cwd)).code).toBe(0);
  const text = readFileSync(join(cwd, 'soup.yaml'), 'utf8')
    .replace('d_model: 64 ', 'd_model: 32 ')
    .replace('d_ff: 256 ', 'd_ff: 64  ')
    .replace('max_length: 64 ', 'max_length: 16 ')
    .replace('steps: 200 ', 'steps: 20  ')
    .replace('push_every_steps: 50 ', 'push_every_steps: 10 ')
    .replace('static_batch_size: 4 ', 'static_batch_size: 2 ');
  writeFileSync(join(cwd, 'soup.yaml'), edit(text));
}

describe('[slow] soup plan / init → train', { timeout: 300_000 }, () => {
  it('plan: batch size, tier, offload check and the measured peak against the budget', async () => {
    const cwd = useTempDir();
    await initTiny(cwd, (t) => t.replace('gradient_checkpointing: false', 'gradient_checkpointing: selective'));
    const r = await soup(['plan', '--json'], cwd);
    expect(r.code, r.stderr).toBe(0);
    const plan = JSON.parse(r.stdout) as Record<string, unknown> & {
      grad_ckpt: { recompute: string[] };
      peak_bytes: number;
      budget_bytes: number;
    };
    expect(plan).toMatchObject({
      batch_size: 16,
      micro_batch_size: 16,
      grad_accum: 1,
      batch_source: 'probe',
      fits: true,
      tokens_per_step: 256,
      steps: 20,
      push_every_steps: 10,
      problems: [],
    });
    // 16 is G: the ceiling of the micro-batch search (divisors of G), not a limit found below a failure.
    expect(plan).toMatchObject({ batch_bound: 'capped', batch_ceiling: 16 });
    expect(plan.grad_ckpt).toEqual({
      setting: 'selective',
      description: 'selective (attention only)',
      recompute: ['h.0.attn.core', 'h.1.attn.core'],
    });
    expect(plan.peak_bytes).toBeGreaterThan(0);
    expect(plan.peak_bytes).toBeLessThanOrEqual(plan.budget_bytes);
    const human = await soup(['plan'], cwd);
    expect(human.stdout).toMatch(
      / {2}batch +micro 16 × 1 = 16 \(micro-batch: cache, key [0-9a-f]{32}\) {2}capped: the ceiling of the search \(G = 16, no accumulation\), not a measured limit/,
    );
    expect(human.stdout).toMatch(
      / {2}checkpointing +selective \(attention only\) \[h\.0\.attn\.core, h\.1\.attn\.core\]\n/,
    );
    expect(human.stdout).toMatch(/ {2}peak \/ budget +[\d.]+ [KM]iB \/ [\d.]+ GiB {2}fits\n/);
  });

  it('plan shows what would stop training: offload to cpu on a CPU device, quantization', async () => {
    const cwd = useTempDir();
    await initTiny(cwd, (t) =>
      t
        .replace('activation_offloading: null', 'activation_offloading: cpu')
        .replace('quantization: none', 'quantization: 4bit')
        .replace('micro_batch_size: auto', 'micro_batch_size: 2'),
    );
    const r = await soup(['plan', '--json'], cwd);
    expect(r.code).toBe(EXIT_CODES.config);
    const plan = JSON.parse(r.stdout) as { offload: { errors: string[] }; problems: string[]; batch_source: string };
    expect(plan.batch_source).toBe('config');
    expect(plan.offload.errors).toHaveLength(1);
    expect(plan.offload.errors[0]).toMatch(/^Activation offloading requires CUDA training\. Current device: cpu\./);
    expect((await soup(['plan'], cwd)).stdout).toMatch(
      / {2}offload +cpu: Activation offloading requires CUDA training/,
    );
    expect(plan.problems).toHaveLength(2);
    expect(plan.problems[0]).toMatch(/^training\.quantization: must be none for soup train/);
    const train = await soup(['train'], cwd);
    expect(train.code).toBe(EXIT_CODES.config);
    const quantLine =
      readFileSync(join(cwd, 'soup.yaml'), 'utf8')
        .split('\n')
        .findIndex((l) => l.includes('quantization:')) + 1;
    expect(train.stderr.split('\n')[0]).toBe(
      `soup: soup.yaml:${quantLine}: training.quantization: must be none for soup train (got 4bit): the ` +
        `onnx-train model trains in float32; the field is for batch-cache keys of other trainers`,
    );
  });

  it('activation_offloading: cpu on a CPU device: train and probe refuse it in one line, exit config', async () => {
    const cwd = useTempDir();
    await initTiny(cwd, (t) => t.replace('activation_offloading: null', 'activation_offloading: cpu'));
    const line =
      readFileSync(join(cwd, 'soup.yaml'), 'utf8')
        .split('\n')
        .findIndex((l) => l.includes('activation_offloading:')) + 1;
    for (const cmd of ['train', 'probe']) {
      const r = await soup([cmd], cwd);
      expect(r.code, `${cmd}: ${r.stderr}`).toBe(EXIT_CODES.config);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(
        new RegExp(
          `^soup: soup\\.yaml:${line}: training\\.activation_offloading: Activation offloading requires CUDA ` +
            `training\\. Current device: cpu\\.`,
        ),
      );
    }
    expect(existsSync(join(cwd, 'soup-output'))).toBe(false);
  });

  it(
    'activation_offloading: disk: probes and trains the segmented step, leaves no scratch file; plan ' + 'shows it',
    async () => {
      const cwd = useTempDir();
      await initTiny(cwd, (t) => t.replace('activation_offloading: null', 'activation_offloading: disk'));
      const r = await soup(['train'], cwd);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/checkpointing off, offload disk to soup-output\/offload \(segmented\)/);
      const json = JSON.parse(
        r.stdout
          .split('\n')
          .find((l) => l.startsWith('RUN_JSON '))!
          .slice(9),
      ) as Record<string, number | boolean | string | null>;
      expect(json).toMatchObject({
        final_step: 20,
        segment_stop: false,
        batch_source: 'probe',
        offload: 'disk',
        pushed_steps: [10, 20],
        final_pushed: true,
        val_skipped: false,
        grad_ckpt: false,
      });
      expect(json).toMatchObject({ batch_size: 16, grad_accum: 16 / (json.micro_batch_size as number) });
      expect(json.tokens_consumed).toBe(20 * 16 * 16);
      expect(Number.isFinite(json.final_loss)).toBe(true);
      expect(json.final_loss as number).toBeLessThan(json.initial_loss as number);
      expect(json.val_loss).toEqual(expect.any(Number));
      // Every step (and every probe child) deleted its scratch files; the folder the run created is gone.
      expect(existsSync(join(cwd, 'soup-output', 'offload'))).toBe(false);
      const leftovers = (dir: string): string[] =>
        readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
          e.isDirectory() ? leftovers(join(dir, e.name)) : e.name.startsWith('soup-act-') ? [e.name] : [],
        );
      expect(leftovers(cwd)).toEqual([]);
      const plan = await soup(['plan', '--json'], cwd);
      expect(plan.code, plan.stderr).toBe(0);
      expect(JSON.parse(plan.stdout)).toMatchObject({
        batch_size: 16,
        micro_batch_size: json.micro_batch_size,
        batch_source: 'cache',
        fits: true,
        offload: {
          target: 'disk',
          save_dir: join(cwd, 'soup-output', 'offload'),
          execution: 'segmented',
          errors: [],
          warnings: [],
        },
      });
      expect((await soup(['plan'], cwd)).stdout).toMatch(/ {2}offload +disk → soup-output\/offload, segmented step\n/);
    },
  );

  it('init → train with a directory store, then train again is a no-op', async () => {
    const cwd = useTempDir();
    await initTiny(cwd);
    const r = await soup(['train'], cwd);
    expect(r.code, r.stderr).toBe(0);
    const json = JSON.parse(
      r.stdout
        .split('\n')
        .find((l) => l.startsWith('RUN_JSON '))!
        .slice(9),
    ) as Record<string, number | boolean | null>;
    expect(json).toMatchObject({
      final_step: 20,
      segment_stop: false,
      batch_size: 16,
      micro_batch_size: 16,
      grad_accum: 1,
      micro_batch: '16 × 1 = 16',
      batch_source: 'probe',
      tokens_consumed: 20 * 16 * 16,
      pushed_steps: [10, 20],
      final_pushed: true,
      val_skipped: false,
    });
    expect(json.val_loss).toEqual(expect.any(Number));
    expect(json.final_loss as number).toBeLessThan(json.initial_loss as number);
    // One unit of memory in the whole result: bytes (`*_bytes`), never a rounded MB beside them.
    const memoryKeys = memoryKeysOf(json);
    expect(memoryKeys.all).toContain('peak_bytes');
    expect(memoryKeys.notBytes).toEqual([]);
    expect(JSON.parse(readFileSync(join(cwd, 'soup-output-ckpt', 'latest.json'), 'utf8'))).toMatchObject({
      step: 20,
      path_in_repo: 'final',
      terminal: true,
    });
    expect(existsSync(join(cwd, 'soup-output', 'final', 'model.safetensors'))).toBe(true);
    expect(r.stderr).toContain('train: 20/20 steps in');
    const again = await soup(['train', '--json'], cwd);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ status: 'complete', final_step: 20 });
  });

  it('no size fits a soup.yaml: the message names training.batch_size, the setting G came from', async () => {
    const cwd = useTempDir();
    await initTiny(cwd);
    const r = await soup(['plan', '--budget', '1MiB'], cwd);
    expect(r.code, r.stderr).toBe(EXIT_CODES.noFit);
    expect(r.stderr).toMatch(/No divisor of training\.batch_size \d+ fits/);
    expect(r.stderr).not.toContain('--global-batch-size');
  });
});
