// soup probe --exec --try on examples/known-cost-trainer, a trainer whose costs are known by construction
// (checkpointing scales memory per sample by ckpt_memory and step time by 1.3). G = 32. Shared by the Node twin's
// file and the PyTorch twin's, which run side by side in the suite's two-at-a-time lane.
import { runNode, runProcess, useTempDir } from '@soup/test-utils';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { PYTHON, SOUP_BIN } from './run-helpers';

export const NODE_TWIN = fileURLToPath(new URL('../../../examples/known-cost-trainer/train.mjs', import.meta.url));
export const TORCH_TWIN = fileURLToPath(new URL('../../../examples/known-cost-trainer/train.py', import.meta.url));
const MiB = 2 ** 20;

export interface TuneJson {
  source: 'measured' | 'cache';
  tune: {
    chosen: number;
    reason: string;
    timedBy?: string;
    rows: {
      label: string;
      values: Record<string, string>;
      microBatchSize: number | null;
      accumulation: number | null;
      samplesPerSecond: number | null;
      note: string | null;
    }[];
  };
}

export function soup(args: string[], cwd: string) {
  return runNode([SOUP_BIN, ...args], {
    cwd,
    timeoutMs: 240_000,
    env: { PATH: process.env.PATH, HOME: cwd, NO_COLOR: '1' },
  });
}

export async function tune(
  cwd: string,
  program: string[],
  trainerArgs: string[],
  budgetBytes: number,
  timeSteps: number,
): Promise<TuneJson> {
  const command = [
    ...program,
    '--micro_batch_size',
    '{micro_batch_size}',
    '--grad_ckpt',
    '{grad_ckpt}',
    '--max_steps',
    '{probe_steps}',
    ...trainerArgs,
  ].join(' ');
  const r = await soup(
    [
      'probe',
      '--exec',
      command,
      '--global-batch-size',
      '32',
      '--try',
      'grad_ckpt=false,true',
      '--budget',
      `${budgetBytes}B`,
      '--json',
      '--time-steps',
      String(timeSteps),
    ],
    cwd,
  );
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as TuneJson;
}

/** The choice, checked against soup's own table: the chosen row is the fastest it measured. */
export function choice(t: TuneJson): { grad_ckpt: string; m: number; a: number } {
  const c = t.tune.rows[t.tune.chosen]!;
  const others = t.tune.rows.filter((_, i) => i !== t.tune.chosen);
  for (const o of others)
    if (o.samplesPerSecond !== null) expect(c.samplesPerSecond!, t.tune.reason).toBeGreaterThan(o.samplesPerSecond);
  return { grad_ckpt: c.values.grad_ckpt!, m: c.microBatchSize!, a: c.accumulation! };
}

/** Peak RSS (bytes) of the trainer holding nothing: its interpreter and imports. */
export async function baselineBytes(program: string[]): Promise<number> {
  const code =
    `import resource, runpy, sys; sys.argv = ['train.py', '--micro_batch_size', '0']; runpy.run_path(` +
    `${JSON.stringify(TORCH_TWIN)}, run_name='__main__'); print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)`;
  const r =
    program[0] === PYTHON
      ? await runProcess(PYTHON, ['-c', code], { timeoutMs: 60_000 })
      : await runProcess(
          process.execPath,
          ['-e', `require('child_process'); console.log(process.memoryUsage().rss / 1024)`],
          { timeoutMs: 60_000 },
        );
  expect(r.code, r.stderr).toBe(0);
  return Number(r.stdout.trim().split('\n').pop()) * 1024;
}

export const TWIN_SCENARIO =
  'no checkpointing at 4 × 8 beats checkpointing at 8 × 4; checkpointing wins when only m = 1 fits without it';

/** The twins' scenario: two budgets, each choice against soup's own table, then the tune cache's answer. */
export async function twinScenario(program: string[], timeSteps: number): Promise<void> {
  const cwd = useTempDir();
  const base = await baselineBytes(program);
  // 64 MiB a sample; checkpointing halves it and makes a sample 1.3× slower (20 → 26 ms), no
  // per-step cost: no checkpointing at 4 × 8 takes 32 × 20 ms an optimizer step, checkpointing
  // at 8 × 4 takes 32 × 26 ms. Budget: no ckpt fits 4 (256 MiB) not 8, ckpt fits 8 (256) not 16.
  const per = ['--per_sample_mib', '64'];
  const one = await tune(cwd, program, [...per, '--step_ms', '0'], Math.round(base + 384 * MiB), timeSteps);
  expect(one.source).toBe('measured');
  expect(one.tune.rows.map((r) => [r.values.grad_ckpt, r.microBatchSize])).toEqual([
    ['false', 4],
    ['true', 8],
  ]);
  expect(choice(one)).toEqual({ grad_ckpt: 'false', m: 4, a: 8 });

  // Checkpointing takes 1/8 of the memory a sample: no ckpt fits only 1 (64 MiB), ckpt fits 8 (64)
  // not 16. With a 20 ms per-step cost, 32 steps of 1 (32 × 40 ms) lose to 4 of 8 (4 × 228 ms).
  const eighth = [...per, '--ckpt_memory', '0.125', '--step_ms', '20'];
  const two = await tune(cwd, program, eighth, Math.round(base + 96 * MiB), timeSteps);
  expect(two.tune.rows.map((r) => [r.values.grad_ckpt, r.microBatchSize])).toEqual([
    ['false', 1],
    ['true', 8],
  ]);
  expect(choice(two)).toEqual({ grad_ckpt: 'true', m: 8, a: 4 });

  // Remembered beside the batch cache, and reused: nothing is run again.
  const again = await tune(cwd, program, eighth, Math.round(base + 96 * MiB), timeSteps);
  expect(again.source).toBe('cache');
  expect(choice(again)).toEqual({ grad_ckpt: 'true', m: 8, a: 4 });
  expect(existsSync(join(cwd, '.soup', 'tune_cache.json'))).toBe(true);
}
