// One cache key for a trainer (issue 47 item 3, issue 43): `soup probe --exec`, `soup run --probe` and
// `--try` key an answer by the command (a token in it redacted), the files it names and the sources
// beside it that it may import. A trainer whose memory per sample lives in an imported module
// (model.mjs / model.py) is probed, run, edited and tuned with real children. Node twin always; the
// PyTorch twin where `import torch` works. Longer than a few seconds because each answer must come
// from real trials: python + torch starts take seconds each on a loaded machine, and each measured
// --try tunes a fit and its timing runs (at m and at the next smaller m).
import { runNode, runProcess, useTempDir } from '@soup/test-utils';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PYTHON, SOUP_BIN, soupEnv, TINY_SAFETENSORS_JS, torchMissing } from '../test/run-helpers';

const MiB = 2 ** 20;
const TOKEN = `hf_${'Zq7Xw3Kp9T'.repeat(4)}`;

const NODE_TRAINER = `import { PER_SAMPLE_MIB } from './model.mjs';
import { mkdirSync, writeFileSync } from 'node:fs';
const arg = (n, d) => { const i = process.argv.indexOf('--' + n); return i < 0 ? d : process.argv[i + 1]; };
const bs = Number(arg('bs', '1'));
const steps = Number(arg('steps', '1'));
const hold = Buffer.alloc(bs * PER_SAMPLE_MIB * 2 ** 20, 1);
const tick = new Int32Array(new SharedArrayBuffer(4));
for (let s = 1; s <= steps; s++) { Atomics.wait(tick, 0, 0, 50); console.log('step ' + s); }
const out = arg('output_dir', null);
if (out) {
  const dir = out + '/checkpoint-' + steps;
  mkdirSync(dir, { recursive: true });
  writeFileSync(dir + '/model.safetensors', ${TINY_SAFETENSORS_JS});
  writeFileSync(dir + '/trainer_state.json', JSON.stringify({ global_step: steps, max_steps: steps }));
}
setTimeout(() => console.log(bs === 0 ? 'rss ' + process.memoryUsage().rss : hold.length), bs === 0 ? 0 : 300);
`;

const TORCH_TRAINER = `import sys, time, resource
import torch
from model import PER_SAMPLE_MIB
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
bs, steps = int(args.get('--bs', '1')), int(args.get('--steps', '1'))
hold = torch.ones(bs * PER_SAMPLE_MIB * 2 ** 20 // 4)
for s in range(1, steps + 1):
    time.sleep(0.05)
    print('step', s, flush=True)
out = args.get('--output_dir')
if out:
    import json, os
    d = os.path.join(out, f'checkpoint-{steps}')
    os.makedirs(d, exist_ok=True)
    header = b'{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'
    open(os.path.join(d, 'model.safetensors'), 'wb').write(len(header).to_bytes(8, 'little') + header + b'\\x01')
    json.dump({'global_step': steps, 'max_steps': steps}, open(os.path.join(d, 'trainer_state.json'), 'w'))
if bs == 0:
    print('rss', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
else:
    time.sleep(0.3)
`;

const torchReason = await torchMissing();
if (torchReason) console.log(`trainer-key.test.ts: the PyTorch twin is skipped: ${torchReason}`);

interface Twin {
  name: string;
  skip: string | null;
  program: string;
  trainer: string;
  model: string;
  source: string;
  module: (perSampleMib: number) => string;
}

const TWINS: Twin[] = [
  {
    name: 'Node twin',
    skip: null,
    program: process.execPath,
    trainer: 'train.mjs',
    model: 'model.mjs',
    source: NODE_TRAINER,
    module: (per) => `export const PER_SAMPLE_MIB = ${per};\n`,
  },
  {
    name: 'PyTorch twin',
    skip: torchReason,
    program: PYTHON,
    trainer: 'train.py',
    model: 'model.py',
    source: TORCH_TRAINER,
    module: (per) => `PER_SAMPLE_MIB = ${per}\n`,
  },
];

function soup(args: string[], cwd: string) {
  return runNode([SOUP_BIN, ...args], { cwd, timeoutMs: 120_000, env: soupEnv(cwd) });
}

/** A trainer folder: the trainer and the module holding its memory per sample; the budget fits 2 × 32 MiB. */
async function setup(twin: Twin): Promise<{ cwd: string; budget: string }> {
  const cwd = useTempDir('soup-trainer-key-');
  writeFileSync(join(cwd, twin.trainer), twin.source);
  writeFileSync(join(cwd, twin.model), twin.module(32));
  const r = await runProcess(twin.program, [twin.trainer, '--bs', '0'], { cwd, timeoutMs: 60_000 });
  expect(r.code, r.stderr).toBe(0);
  const base = Number(/rss (\d+)/.exec(r.stdout)![1]);
  // 32 MiB a sample: 2 fit (64 MiB); at 64 MiB a sample 2 do not (128), 1 fits.
  return { cwd, budget: `${Math.round(base + 96 * MiB)}B` };
}

/** Every cache file under `cwd` (the batch cache, its provenance, the tune cache), read as text. */
function cacheText(cwd: string): string {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (/cache/.test(name)) out.push(readFileSync(path, 'utf8'));
    }
  };
  walk(cwd);
  return out.join('\n');
}

/** The probe command: the trainer at {micro_batch_size}, a token among its arguments. */
const probeCommand = (twin: Twin): string =>
  `${twin.program} ${twin.trainer} --bs {micro_batch_size} --accum {grad_accum} --hf_token ${TOKEN}`;

const probeArgs = (twin: Twin, budget: string): string[] => [
  'probe',
  '--exec',
  probeCommand(twin),
  '--global-batch-size',
  '2',
  '--budget',
  budget,
  '--json',
];

/**
 * `soup probe --exec … --try opt=a` at G = 1 with K = `timeSteps`: where its answer came from. One micro-batch, so a
 * measured tune is one fit and its timing runs (at G = 2, the walk to m = 1 took half of this file's time): the key
 * is under test here, not the tuner.
 */
function tuner(twin: Twin, cwd: string, budget: string): (timeSteps: number) => Promise<string> {
  const cmd =
    `${twin.program} ${twin.trainer} --bs {micro_batch_size} --accum {grad_accum} --steps {probe_steps} ` +
    `--opt {opt} --hf_token ${TOKEN}`;
  return async (timeSteps) => {
    const r = await soup(
      [
        ...['probe', '--exec', cmd, '--global-batch-size', '1', '--budget', budget, '--try', 'opt=a'],
        ...['--time-steps', String(timeSteps), '--json'],
      ],
      cwd,
    );
    expect(r.code, r.stderr).toBe(0);
    return (JSON.parse(r.stdout) as { source: string }).source;
  };
}

interface ProbeJson {
  batch_size: number;
  source: string;
  trials: unknown[];
  provenance: { files?: Record<string, string> } | null;
}

describe('[slow] one cache key for a trainer, its imports included', { timeout: 240_000 }, () => {
  for (const twin of TWINS) {
    it.skipIf(twin.skip !== null)(
      `${twin.name}: an edit in ${twin.model} beside ${twin.trainer} is probed again, and said so; no token ` +
        'reaches a cache file',
      async () => {
        const { cwd, budget } = await setup(twin);
        const first = await soup(probeArgs(twin, budget), cwd);
        expect(first.code, first.stderr).toBe(0);
        const p1 = JSON.parse(first.stdout) as ProbeJson;
        expect(p1).toMatchObject({ batch_size: 2, source: 'probe' });
        // The provenance lists the imported module beside the trainer.
        expect(Object.keys(p1.provenance?.files ?? {})).toEqual(expect.arrayContaining([twin.trainer, twin.model]));
        const ls = JSON.parse((await soup(['cache', 'ls', '--json'], cwd)).stdout) as {
          entries: { provenance: { files: Record<string, string> | null } | null }[];
        };
        expect(ls.entries.map((e) => Object.keys(e.provenance?.files ?? {}))).toEqual([
          expect.arrayContaining([twin.trainer, twin.model]),
        ]);

        // An edit in the imported module only: 64 MiB a sample now, so only 1 fits.
        writeFileSync(join(cwd, twin.model), twin.module(64));
        const second = await soup(probeArgs(twin, budget), cwd);
        expect(second.code, second.stderr).toBe(0);
        const p2 = JSON.parse(second.stdout) as ProbeJson;
        expect(p2).toMatchObject({ batch_size: 1, source: 'probe' });
        expect(second.stderr).toMatch(
          new RegExp(`trainer changed since the cached answer \\(2, [^)]*\\): ${twin.model.replace('.', '\\.')} \\(`),
        );
        expect(cacheText(cwd)).not.toContain(TOKEN);
      },
    );
  }

  for (const twin of TWINS) {
    it.skipIf(twin.skip !== null)(
      `${twin.name}: soup run --probe reuses soup probe --exec's answer; --try is tuned again after an edit in ` +
        `${twin.model} or in the trainer${twin.model === 'model.mjs' ? ', or for another --time-steps' : ''}; no ` +
        'token reaches the tune cache',
      async () => {
        const { cwd, budget } = await setup(twin);
        const first = await soup(probeArgs(twin, budget), cwd);
        expect(first.code, first.stderr).toBe(0);
        expect(JSON.parse(first.stdout)).toMatchObject({ batch_size: 2, source: 'probe' });
        // soup run --probe, same trainer: the probe's answer, no trial.
        const run = await runNode(
          [
            SOUP_BIN,
            'run',
            ...['--repo', 'file://store', '--output-dir', 'out', '--global-batch-size', '2', '--budget', budget],
            ...['--settle', '200ms', '--poll', '100ms', '--probe', probeCommand(twin), '--'],
            ...[
              twin.program,
              twin.trainer,
              '--bs',
              '{micro_batch_size}',
              '--steps',
              '1',
              '--output_dir',
              '{output_dir}',
            ],
          ],
          { cwd, timeoutMs: 120_000, env: soupEnv(cwd) },
        );
        expect(run.code, run.stderr).toBe(0);
        expect(run.stdout).toMatch(/micro-batch 2 × \d+ = \d+ \(from the cache, key [0-9a-f]{32}[;)]/);
        expect(run.stdout).not.toMatch(/trying batch|batch +\d+ (fits|over)/);

        const tune = tuner(twin, cwd, budget);
        // K: runs of 1, 1 + K and 1 + 2K steps of 50 ms. A python + torch start swings by far more than 2 steps on a
        // loaded machine, and the timing runs must show their steps (else nothing is timed): 8 there.
        const K = twin.model === 'model.py' ? 8 : 2;
        expect(await tune(K)).toBe('measured');
        expect(await tune(K)).toBe('cache');
        writeFileSync(join(cwd, twin.model), `${twin.module(32)}\n`);
        expect(await tune(K)).toBe('measured');
        writeFileSync(join(cwd, twin.trainer), `${twin.source}\n`);
        expect(await tune(K)).toBe('measured');
        // K in the key does not depend on the trainer's language: the Node twin alone shows it (python + torch
        // starts take seconds each).
        if (twin.model === 'model.mjs') {
          expect(await tune(3)).toBe('measured');
          expect(await tune(3)).toBe('cache');
        }
        expect(cacheText(cwd)).not.toContain(TOKEN);
      },
    );
  }
});
