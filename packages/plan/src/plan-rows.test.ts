import { validateConfig } from '@soup/config';
import { useTempDir } from '@soup/test-utils';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { planRows } from './plan-rows';
import { planRun } from './plan-run';
import { tinyConfigText } from './_test-config';

/** The rows every plan starts with, in order. */
const HEAD = ['device', 'model', 'batch', 'checkpointing', 'offload', 'peak / budget'];

/** A tiny soup.yaml in a fresh folder with its training text; `extra` goes under `training:`. */
function project(extra: string) {
  const cwd = useTempDir();
  mkdirSync(join(cwd, 'data'));
  writeFileSync(join(cwd, 'data', 'train.txt'), 'the quick brown fox jumps over the lazy dog. '.repeat(200));
  const text = tinyConfigText({ model: 'model:\n  n_layers: 1\n  d_model: 32\n  n_heads: 2\n', training: extra });
  const file = join(cwd, 'soup.yaml');
  const { config, errors } = validateConfig({ text, file, cwd });
  if (!config) throw new Error(`expected a valid config: ${JSON.stringify(errors)}`);
  const io = { env: { ...process.env, SOUP_BATCH_CACHE_PATH: join(cwd, 'cache.json') }, cwd, noCache: true };
  return { config, file: 'soup.yaml', io };
}

const marks = { green: (s: string) => `<g>${s}</g>`, red: (s: string) => `<r>${s}</r>`, yellow: (s: string) => s };

describe("planRows: soup plan's answer in words", () => {
  it('a config soup train would refuse: what is known, one problem row each, nothing measured', async () => {
    const { config, file, io } = project('  micro_batch_size: 4\n  activation_offloading: cpu\n');
    const plan = await planRun({ ...io, signal: new AbortController().signal, config, file });
    expect(plan.prepared).toBeNull();
    const rows = planRows({ ...plan, config, cwd: io.cwd, style: marks });
    expect(rows.map(([label]) => label)).toEqual([...HEAD, ...plan.report.problems.map(() => 'problem')]);
    expect(plan.report.problems.length).toBeGreaterThan(0);
    expect(rows[1]![1]).toBe('soup/tiny-gpt: 1 layers, d_model 32, 2 heads, max_length 16');
    expect(rows[2]![1]).toBe('micro 4 × 2 = 8 (config)');
    expect(rows[5]![1]).toBe('not measured (fix the problems first)');
    expect(rows[6]![1]).toBe(`<r>${plan.report.problems[0]}</r>`);
  });

  it('a measured plan: the micro-batch and its source, the peak against the budget, the checkpoints', async () => {
    const { config, file, io } = project('  micro_batch_size: 2\n  memory_budget: 4GiB\n');
    const plan = await planRun({ ...io, signal: new AbortController().signal, config, file });
    const rows = Object.fromEntries(planRows({ ...plan, config, cwd: io.cwd, style: marks }));
    expect(Object.keys(rows)).toEqual([...HEAD, 'per step', 'steps']);
    expect(rows.batch).toBe('micro 2 × 4 = 8 (micro-batch: config)');
    expect(rows['peak / budget']).toMatch(/^\d+(\.\d+)? [KMG]iB \/ 4\.00 GiB {2}<g>fits<\/g>$/);
    expect(rows['per step']).toBe('128 tokens');
    expect(rows.steps).toBe('12, a checkpoint every 3');
    expect(rows.offload).toBe('off');
  });
});
