// A run's outputs as others read them, through the real bin: one run id everywhere, HF log_history,
// final/ as a GPT-2 that PyTorch loads from config.json alone, the loss curve (terminal, SVG rendered
// by headless Chromium), `soup ckpt push` without --step, `soup init -c`, `soup plan` refusing first.
import { runNode, runProcess, useTempDir, torchMissing } from '@soup/test-utils';
import { sequentialBatches } from '@soup/onnx-train';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assetPath } from './_assets';
import { decodePng } from '@soup/loss-plot';
import { EXIT_CODES } from './exit-codes';
import type { SessionResult as RunJson } from '@soup/supervisor';

const bin = fileURLToPath(new URL('../bin/soup.js', import.meta.url));
const gpt2Script = fileURLToPath(
  new URL('../../../packages/onnx-train/src/__fixtures__/gpt2_from_config.py', import.meta.url),
);
const python = process.env.PYTHON ?? '/usr/bin/python3';
const noTorch = torchMissing(python);
if (noTorch) console.log(`skipping the PyTorch load of final/: ${noTorch}`);
const chromium = process.env.CHROMIUM ?? '/usr/bin/chromium';
const chromiumMissing = existsSync(chromium) ? null : `${chromium} is not installed (Debian: apt-get install chromium)`;
if (chromiumMissing) console.log(`skipping the SVG render check: ${chromiumMissing}`);

const STEPS = 24;
const BATCH = 2;
const MAX_LENGTH = 16;
const VAL_BATCHES = 3;

function soup(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}) {
  return runNode([bin, ...args], {
    cwd,
    timeoutMs: 120_000,
    env: { PATH: process.env.PATH, HOME: cwd, NO_COLOR: '1', SOUP_BATCH_CACHE_PATH: join(cwd, 'cache.json'), ...env },
  });
}

const readJson = (p: string): Record<string, unknown> => JSON.parse(readFileSync(p, 'utf8')) as Record<string, unknown>;

let cwd: string;
let rj: RunJson;
let trainOut: { stdout: string; stderr: string };
beforeAll(async () => {
  cwd = mkdtempSync(join(tmpdir(), 'soup-i16-interop-'));
  writeFileSync(
    join(cwd, 'soup.yaml'),
    `base: soup/interop-gpt
model: {vocab_size: 256, d_model: 32, n_heads: 2, n_layers: 2, d_ff: 64}
data: {train: ${assetPath('corpus/train.txt')}, val: ${assetPath('corpus/val.txt')}, max_length: ${MAX_LENGTH}}
training: {steps: ${STEPS}, batch_size: ${BATCH}, micro_batch_size: ${BATCH}, lr: 0.01, warmup_steps: 2, threads: 1, val_batches: ${VAL_BATCHES}}
hub: {push_every_steps: 8, keep_local: 3}
output: out
`,
  );
  const r = await soup(['train', '--plot', 'train-loss.svg'], cwd);
  if (r.code !== 0) throw new Error(`soup train exited ${r.code}: ${r.stderr}`);
  trainOut = r;
  const line = r.stdout.split('\n').find((l) => l.startsWith('RUN_JSON '))!;
  rj = JSON.parse(line.slice('RUN_JSON '.length)) as RunJson;
}, 240_000);
afterAll(() => rmSync(cwd, { recursive: true, force: true }));

describe('[slow] a run leaves soup in the formats others load', { timeout: 240_000 }, () => {
  it('has one run id everywhere: trainer_state.json, soup_run.json, latest.json, manifest, RUN_JSON', () => {
    const hub = join(cwd, 'out-ckpt');
    const ids = new Set<unknown>([rj.run, readJson(join(hub, 'latest.json')).run]);
    for (const folder of ['final', 'ckpt/checkpoint-8', 'ckpt/checkpoint-16']) {
      ids.add(readJson(join(hub, folder, 'trainer_state.json')).run);
      ids.add(readJson(join(hub, folder, 'soup_run.json')).run);
      ids.add(readJson(join(hub, folder, 'manifest.json')).run);
    }
    expect([...ids]).toEqual([rj.run]);
  });

  it(
    "trainer_state.json carries the HF Trainer's log_history (step, loss, learning_rate, eval_loss) and " +
      'global_step',
    () => {
      const state = readJson(join(cwd, 'out-ckpt', 'final', 'trainer_state.json'));
      expect(state).toMatchObject({ global_step: STEPS, max_steps: STEPS, train_batch_size: BATCH, logging_steps: 1 });
      const history = state.log_history as Array<Record<string, number>>;
      const train = history.filter((e) => 'loss' in e);
      expect(train.map((e) => e.step)).toEqual(Array.from({ length: STEPS }, (_, i) => i + 1));
      for (const e of train) {
        expect(Object.keys(e).sort()).toEqual(['grad_norm', 'learning_rate', 'loss', 'step']);
        // Real numbers: expect.any(Number) would accept NaN.
        expect(Number.isFinite(e.loss) && e.loss! > 0, `loss at step ${e.step}: ${e.loss}`).toBe(true);
        expect(Number.isFinite(e.grad_norm) && e.grad_norm! > 0, `grad_norm at step ${e.step}: ${e.grad_norm}`).toBe(
          true,
        );
        expect(
          Number.isFinite(e.learning_rate) && e.learning_rate! >= 0,
          `learning_rate at step ${e.step}: ${e.learning_rate}`,
        ).toBe(true);
      }
      expect(train[0]!.loss).toBeCloseTo(rj.initial_loss!, 6);
      expect(train.at(-1)!.loss).toBeCloseTo(rj.final_loss!, 6);
      expect(history.filter((e) => 'eval_loss' in e)).toEqual([{ step: STEPS, eval_loss: rj.val_loss }]);
      // the checkpoint at step 8 holds the history up to step 8 only
      const at8 = readJson(join(cwd, 'out-ckpt', 'ckpt', 'checkpoint-8', 'trainer_state.json'));
      expect((at8.log_history as Array<{ step: number }>).map((e) => e.step)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    },
  );

  it('final/ holds config.json (GPT2Config fields) and generation_config.json beside model.safetensors', () => {
    const final = join(cwd, 'out-ckpt', 'final');
    expect(readJson(join(final, 'config.json'))).toMatchObject({
      model_type: 'gpt2',
      architectures: ['GPT2LMHeadModel'],
      vocab_size: 256,
      n_positions: MAX_LENGTH,
      n_embd: 32,
      n_layer: 2,
      n_head: 2,
      n_inner: 64,
      activation_function: 'gelu_new',
      layer_norm_epsilon: 1e-5,
      tie_word_embeddings: true,
    });
    expect(readJson(join(final, 'generation_config.json'))).toMatchObject({ max_length: MAX_LENGTH });
    expect(Object.keys(readJson(join(final, 'manifest.json')).files as object).sort()).toEqual([
      'config.json',
      'generation_config.json',
      'model.safetensors',
      'optimizer.safetensors',
      'soup_run.json',
      'trainer_state.json',
    ]);
  });

  it.skipIf(noTorch !== null)(
    "a PyTorch GPT-2 built from final/config.json alone reproduces soup's validation loss to 1e-4",
    async () => {
      const tokens = new Uint8Array(readFileSync(assetPath('corpus/val.txt')));
      const batches = sequentialBatches({ tokens, seqLen: MAX_LENGTH, batchSize: BATCH, maxBatches: VAL_BATCHES });
      const rows = (a: BigInt64Array, n: number): number[][] =>
        Array.from({ length: n }, (_, i) => Array.from(a.subarray(i * MAX_LENGTH, (i + 1) * MAX_LENGTH), Number));
      const batch = {
        input_ids: batches.flatMap((b) => rows(b.inputIds, b.batchSize)),
        labels: batches.flatMap((b) => rows(b.labels, b.batchSize)),
      };
      const file = join(cwd, 'val-batch.json');
      writeFileSync(file, JSON.stringify(batch));
      const r = await runProcess(python, [gpt2Script, 'loss', join(cwd, 'out-ckpt', 'final'), file], {
        timeoutMs: 120_000,
      });
      expect(r.code, r.stderr).toBe(0);
      const torchLoss = (JSON.parse(r.stdout) as { loss: number }).loss;
      expect(batch.input_ids).toHaveLength(BATCH * VAL_BATCHES);
      expect(Math.abs(torchLoss - rj.val_loss!)).toBeLessThan(1e-4);
    },
  );

  it(
    'soup train ends with the loss curve; soup ckpt status draws it (plain text under NO_COLOR) and ' +
      '--plot writes an SVG',
    async () => {
      expect(trainOut.stdout).toMatch(new RegExp(`loss curve \\(${STEPS} points, steps 1\\.\\.${STEPS}\\)`));
      expect(trainOut.stdout).toContain(`eval_loss ${rj.val_loss!.toFixed(4)}`);
      expect(trainOut.stdout).toContain('wrote the loss plot to train-loss.svg');
      const st = await soup(['ckpt', 'status', '--repo', 'file://out-ckpt', '--plot', 'plots/status.svg'], cwd);
      expect(st.code, st.stderr).toBe(0);
      expect(st.stdout).toMatch(/loss curve \(24 points, steps 1\.\.24\): [\d.]+ → [\d.]+, min [\d.]+\n/);
      expect(st.stdout).not.toMatch(/[\u2800-\u28ff]|\x1b/);
      const svg = readFileSync(join(cwd, 'plots', 'status.svg'), 'utf8');
      expect(svg).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
      expect((/<polyline[^>]* points="([^"]+)"/.exec(svg)?.[1] ?? '').split(' ')).toHaveLength(STEPS);
      expect(svg).toContain(`eval_loss ${rj.val_loss!.toFixed(4)}`);
    },
  );

  it.skipIf(chromiumMissing !== null)(
    'the SVG renders in headless Chromium: the screenshot is not blank and shows the curve',
    async () => {
      const svg = join(cwd, 'train-loss.svg');
      const png = join(cwd, 'shot.png');
      const profile = useTempDir();
      const r = await runProcess(
        chromium,
        [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
          '--no-first-run',
          `--user-data-dir=${profile}`,
          '--hide-scrollbars',
          '--window-size=640,320',
          `--screenshot=${png}`,
          `file://${svg}`,
        ],
        { timeoutMs: 90_000 },
      );
      expect(existsSync(png), r.stderr.slice(-2000)).toBe(true);
      const img = decodePng(readFileSync(png));
      expect([img.width, img.height]).toEqual([640, 320]);
      let ink = 0;
      let blue = 0;
      for (let i = 0; i < img.rgba.length; i += 4) {
        const [red, green, b] = [img.rgba[i]!, img.rgba[i + 1]!, img.rgba[i + 2]!];
        if (red < 230 || green < 230 || b < 230) ink += 1;
        if (b > 170 && red < 120 && green < 160) blue += 1; // the loss line, #1f6feb
      }
      const pixels = img.width * img.height;
      expect(ink / pixels).toBeGreaterThan(0.01);
      expect(ink / pixels).toBeLessThan(0.5);
      expect(blue).toBeGreaterThan(300);
    },
  );
});

describe('[slow] soup ckpt push, init, plan', { timeout: 120_000 }, () => {
  it("soup ckpt push takes the step from trainer_state.json's global_step when --step is absent", async () => {
    const dir = useTempDir();
    const ck = join(dir, 'checkpoint-7');
    mkdirSync(ck);
    writeFileSync(
      join(ck, 'trainer_state.json'),
      JSON.stringify({ global_step: 7, log_history: [{ step: 7, loss: 2.5, learning_rate: 1e-4 }] }),
    );
    writeFileSync(join(ck, 'model.bin'), 'weights');
    const r = await soup(['ckpt', 'push', 'checkpoint-7', '--repo', 'file://store', '--run', 'hf-run', '--json'], dir);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: true, step: 7, path_in_repo: 'ckpt/checkpoint-7' });
    expect(readJson(join(dir, 'store', 'latest.json'))).toMatchObject({ step: 7, run: 'hf-run' });
    const explicit = await soup(
      ['ckpt', 'push', 'checkpoint-7', '--step', '9', '--repo', 'file://store', '--run', 'hf-run', '--json'],
      dir,
    );
    expect(JSON.parse(explicit.stdout)).toMatchObject({ step: 9 });
    mkdirSync(join(dir, 'bare'));
    writeFileSync(join(dir, 'bare', 'x.bin'), 'x');
    const bare = await soup(['ckpt', 'push', 'bare', '--repo', 'file://store', '--run', 'hf-run'], dir);
    expect(bare.code).toBe(EXIT_CODES.usage);
    expect(bare.stderr).toBe('soup: bare has no trainer_state.json with a global_step: pass --step N\n');
  });

  it(
    'soup init -c other.yaml works in a folder that already has data/; --force never overwrites the ' + 'training text',
    async () => {
      const dir = useTempDir();
      mkdirSync(join(dir, 'data'));
      writeFileSync(join(dir, 'data', 'train.txt'), 'my own training text\n'.repeat(100));
      const r = await soup(['init', '-c', 'other.yaml', '--json'], dir);
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual({
        ok: true,
        template: 'tiny',
        files: ['other.yaml', join('data', 'val.txt')],
        kept: [join('data', 'train.txt')],
      });
      expect(readFileSync(join(dir, 'data', 'train.txt'), 'utf8')).toBe('my own training text\n'.repeat(100));
      const again = await soup(['init', '-c', 'other.yaml'], dir);
      expect(again.code).toBe(EXIT_CODES.usage);
      writeFileSync(join(dir, 'data', 'val.txt'), 'my own validation text\n');
      const forced = await soup(['init', '-c', 'other.yaml', '--force', '--template', 'small'], dir);
      expect(forced.code, forced.stderr).toBe(0);
      expect(forced.stdout).toContain(
        'kept data/train.txt, data/val.txt: already there (soup never overwrites training text)',
      );
      expect(readFileSync(join(dir, 'data', 'train.txt'), 'utf8')).toBe('my own training text\n'.repeat(100));
      expect(readFileSync(join(dir, 'data', 'val.txt'), 'utf8')).toBe('my own validation text\n');
      expect(readFileSync(join(dir, 'other.yaml'), 'utf8')).toContain('base: soup/small-gpt');
    },
  );

  it('soup plan refuses lora.r: 8 before any probe (exit 3, nothing tried, nothing cached)', async () => {
    const dir = useTempDir();
    expect((await soup(['init'], dir)).code).toBe(0);
    const yaml = readFileSync(join(dir, 'soup.yaml'), 'utf8');
    expect(yaml).toContain('micro_batch_size: auto');
    writeFileSync(join(dir, 'soup.yaml'), yaml.replace('r: 0 ', 'r: 8 '));
    const r = await soup(['plan'], dir);
    expect(r.code).toBe(EXIT_CODES.config);
    expect(r.stdout).toMatch(/problem +training\.lora\.r: must be 0 for soup train \(got 8\)/);
    expect(r.stdout).toMatch(/batch +16; micro-batch auto: not probed \(fix the problems first\)/);
    expect(`${r.stdout}${r.stderr}`).not.toMatch(/trying batch|batch +\d+ +fits|measured one step/);
    expect(r.stderr).toContain('soup train would refuse this config (1 problem); nothing was probed');
    expect(existsSync(join(dir, 'cache.json'))).toBe(false);
    const json = await soup(['plan', '--json'], dir);
    expect(JSON.parse(json.stdout)).toMatchObject({
      batch_size: 16,
      micro_batch_size: null,
      grad_accum: null,
      fits: null,
      trials: [],
      problems: [expect.stringMatching(/^training\.lora\.r: /)],
    });
  });
});
