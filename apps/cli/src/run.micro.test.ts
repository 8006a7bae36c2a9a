// `soup run --global-batch-size 32` on a device that shrinks mid-run: the trainer (the Node twin, and
// the PyTorch twin where `import torch` works) takes {micro_batch_size} and {grad_accum} and raises a
// real allocation failure when m exceeds a capacity that drops at step 6. One session, one step-down,
// the weights of an uninterrupted run at the smaller m, soup_run.json and the cache saying so.
import { runNode, useTempDir } from '@soup/test-utils';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT_CODES } from './exit-codes';
import {
  maxAbsDiff,
  NODE_TRAINER,
  SOUP_BIN,
  PYTHON,
  readJson,
  referenceOutput,
  runJsonOf,
  soupEnv,
  soupRun,
  TORCH_TRAINER,
  torchMissing,
} from '../test/run-helpers';

interface RunJson {
  status: string;
  batch_size: number;
  micro_batch_size: number;
  grad_accum: number;
  micro_batch: string;
  oom_step_downs: { step: number; from: number; to: number; peak_bytes: number | null; error: string }[];
}

const missing = await torchMissing();
if (missing)
  process.stdout.write(
    `run.micro.test.ts: the PyTorch twin is skipped: ${missing} (Debian: apt-get install -y python3-torch, or set ` +
      `PYTHON)\n`,
  );

const TWINS = [
  {
    name: 'Node twin (onnx-train)',
    skip: null as string | null,
    cmd: [process.execPath, NODE_TRAINER],
    oom: /^RangeError: Array buffer allocation failed$/,
  },
  // float64: in float32 the summation order of 32 × 1 and 16 × 2 differs by rounding, which AdamW's first steps
  // amplify to ~4e-5 over 12 steps; in float64 the step-down is seen to be exact to far below 1e-5.
  {
    name: 'PyTorch twin (float64)',
    skip: missing,
    cmd: [PYTHON, TORCH_TRAINER, '--dtype', 'float64'],
    oom: /^RuntimeError: \[enforce fail at alloc_cpu\.cpp:\d+\] .*DefaultCPUAllocator: can't allocate memory/,
  },
];

function argvOf(cmd: string[], steps: number): string[] {
  return [
    ...cmd,
    '--output_dir',
    '{output_dir}',
    '--per_device_train_batch_size',
    '{micro_batch_size}',
    '--gradient_accumulation_steps',
    '{grad_accum}',
    '--max_steps',
    String(steps),
    '--save_steps',
    '3',
    '--resume_from_checkpoint',
    '{resume_from}',
  ];
}

function probeOf(cmd: string[]): string {
  return [
    ...cmd,
    '--output_dir',
    'probe-out',
    '--per_device_train_batch_size',
    '{micro_batch_size}',
    '--max_steps',
    '1',
    '--save_steps',
    '0',
  ].join(' ');
}

const OPTIONS = [
  '--repo',
  'file://store',
  '--output-dir',
  'out',
  '--global-batch-size',
  '32',
  '--budget',
  '6GiB',
  '--settle',
  '500ms',
  '--poll',
  '200ms',
];
// Unset for the PyTorch peer, as the benches do (OpenBLAS hints from the environment).
const PEER = { OPENBLAS_CORETYPE: undefined, OPENBLAS_L2_SIZE: undefined };

describe('[slow] soup run --global-batch-size: a device that shrinks mid-run', { timeout: 600_000 }, () => {
  for (const twin of TWINS) {
    it.skipIf(twin.skip !== null)(
      `${twin.name}: one session, one step-down 32 × 1 → 16 × 2 at step 6, weights of an uninterrupted 16 × 2 ` +
        `run, soup_run.json and the cache lowered`,
      async () => {
        const cwd = useTempDir('soup-run-micro-');
        const argv = argvOf(twin.cmd, 12);
        // The device holds 16 samples a micro-batch from step 6 on (the probe's one step sees the whole device).
        const env = soupEnv(cwd, { SOUP_EXAMPLE_CAPACITY: '6:16', ...PEER });
        const r = await soupRun(cwd, [...OPTIONS, '--probe', probeOf(twin.cmd)], argv, env, 400_000);
        expect(r.code, r.stderr).toBe(0);
        expect(r.stdout).toContain('micro 32 × 1 = 32 (probe)');
        expect(r.stdout).toMatch(
          /out of memory at step 6 with micro 32 × 1 = 32 \(.*\): resuming from out\/checkpoint-6 \(step 6\) with micro 16 × 2 = 32 \(step-down 1 of at most 3\)/,
        );
        expect(r.stdout.match(/launched trainer/g)).toHaveLength(2);
        expect(r.stdout).toMatch(/run complete: pushed final\//);
        const result = runJsonOf<RunJson>(r.stdout);
        expect(result).toMatchObject({
          status: 'finished',
          batch_size: 32,
          micro_batch_size: 16,
          grad_accum: 2,
          micro_batch: '16 × 2 = 32',
        });
        expect(result.oom_step_downs).toHaveLength(1);
        expect(result.oom_step_downs[0]).toMatchObject({ step: 6, from: 32, to: 16 });
        expect(result.oom_step_downs[0]!.error).toMatch(twin.oom);
        expect(result.oom_step_downs[0]!.peak_bytes).toBeGreaterThan(0);

        const record = readJson<{
          global_batch_size: number;
          sessions: { micro_batch_size: number; grad_accum: number; oom_step_downs: unknown[] }[];
        }>(join(cwd, 'store', 'soup_run.json'));
        expect(record.global_batch_size).toBe(32);
        expect(record.sessions).toHaveLength(1);
        expect(record.sessions[0]).toMatchObject({
          micro_batch_size: 16,
          grad_accum: 2,
          oom_step_downs: [{ step: 6, from: 32, to: 16, error: expect.stringMatching(twin.oom) }],
        });

        const cache = JSON.parse(readFileSync(join(cwd, 'batch_cache.json'), 'utf8')) as Record<string, number>;
        expect(Object.values(cache)).toEqual([16]);
        const meta = JSON.parse(readFileSync(join(cwd, 'batch_cache.meta.json'), 'utf8')) as {
          entries: Record<string, { note?: string }>;
        };
        expect(Object.values(meta.entries)[0]!.note).toBe(
          'mid-run OOM at step 6 (micro 32 × 1 = 32 failed; stepped down to 16 × 2 = 32)',
        );
        const ls = await runNode([SOUP_BIN, 'cache', 'ls'], { cwd, env, timeoutMs: 60_000 });
        expect(ls.stdout).toMatch(
          /\nsoup:\s+↳ mid-run OOM at step 6 \(micro 32 × 1 = 32 failed; stepped down to 16 × 2 = 32\)/,
        );

        // The reference: the same trainer alone, 16 × 2 from the first step, no capacity limit.
        const ref = await referenceOutput(
          cwd,
          argv,
          { '{micro_batch_size}': '16', '{grad_accum}': '2' },
          { ...process.env, ...PEER },
        );
        const diff = maxAbsDiff(join(cwd, 'store', 'final', 'model.safetensors'), join(ref, 'model.safetensors'));
        process.stdout.write(`${twin.name}: max |w(soup run, 32 × 1 then 16 × 2) − w(16 × 2 throughout)| = ${diff}\n`);
        expect(diff).toBeLessThanOrEqual(1e-5);
      },
    );
  }

  it(
    'a later session on a smaller device keeps G with its own m ("micro 8 × 4 = 32 (was 32 × 1 last ' +
      'session)"); a changed G is refused as another run',
    async () => {
      const cwd = useTempDir('soup-run-micro-');
      const cmd = [process.execPath, NODE_TRAINER];
      const argv = argvOf(cmd, 12);
      const options = [...OPTIONS, '--horizon', '12', '--probe', probeOf(cmd)];
      // Session 1: the whole device; the trainer is stopped at step 4 (a scheduler's SIGTERM): a segment.
      const s1 = await soupRun(cwd, options, argv, soupEnv(cwd, { SOUP_EXAMPLE_FAULT: 'stop-at:4' }));
      expect(s1.code, s1.stderr).toBe(EXIT_CODES.segmentSaved);
      expect(runJsonOf<RunJson>(s1.stdout)).toMatchObject({ micro_batch_size: 32, grad_accum: 1, oom_step_downs: [] });
      // Session 2: a device that holds 8 (its own probe: the cache answer is another device's).
      const s2 = await soupRun(cwd, [...options, '--no-cache'], argv, soupEnv(cwd, { SOUP_EXAMPLE_CAPACITY: '8' }));
      expect(s2.code, s2.stderr).toBe(0);
      expect(s2.stdout).toContain('micro 8 × 4 = 32 (was 32 × 1 last session) (probe)');
      expect(s2.stdout).toMatch(/trainer: resumed from .*checkpoint-4 at step 4, batch 8 × 4 accumulated/);
      const record = readJson<{
        sessions: { micro_batch_size: number; grad_accum: number; start_step: number | null }[];
      }>(join(cwd, 'store', 'soup_run.json'));
      expect(record.sessions.map((s) => [s.start_step, s.micro_batch_size, s.grad_accum])).toEqual([
        [null, 32, 1],
        [4, 8, 4],
      ]);
      // A changed G is another run: refused, naming the change.
      const s3 = await soupRun(
        cwd,
        [...options.map((o) => (o === '32' ? '64' : o)), '--resume', 'auto'],
        argv,
        soupEnv(cwd),
      );
      expect(s3.code).toBe(EXIT_CODES.resume);
      expect(s3.stderr).toContain('--global-batch-size differs: 32 → 64');
    },
  );
});
