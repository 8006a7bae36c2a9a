// soup probe --exec --try on what its timing runs show (issue 47, items 2 and 7): a configuration
// whose trainer exits 0 before running {probe_steps} is never chosen, and one whose longer run goes
// over the budget is timed again at the next smaller divisor. The trainer is examples/known-cost-
// trainer (--stop_after: a step cap of its own; --grow_per_sample_mib: a peak that grows each step).
// Node twin always; the PyTorch twin where `import torch` works: its runs each start python and
// torch (about 1.5 s), and six runs are the fewest that time two configurations, hence its length.
import { runNode, runProcess, useTempDir } from '@soup/test-utils';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PYTHON, SOUP_BIN, torchMissing } from '../test/run-helpers';

const NODE_TWIN = fileURLToPath(new URL('../../../examples/known-cost-trainer/train.mjs', import.meta.url));
const TORCH_TWIN = fileURLToPath(new URL('../../../examples/known-cost-trainer/train.py', import.meta.url));
const MiB = 2 ** 20;

interface TuneJson {
  tune: {
    chosen: number;
    rows: { label: string; microBatchSize: number | null; samplesPerSecond: number | null; note: string | null }[];
  };
}

async function tune(program: string[], flags: string, args: string[]) {
  const cwd = useTempDir();
  const command = `${program.join(' ')} --micro_batch_size {micro_batch_size} --max_steps {probe_steps} ${flags}`;
  const r = await runNode([SOUP_BIN, 'probe', '--exec', command, '--json', '--no-cache', ...args], {
    cwd,
    timeoutMs: 120_000,
    env: { PATH: process.env.PATH, HOME: cwd, NO_COLOR: '1' },
  });
  return r;
}

const torchReason = await torchMissing();
const twins = [
  { name: 'Node twin', program: [process.execPath, NODE_TWIN], skip: null as string | null },
  { name: 'PyTorch twin', program: [PYTHON, TORCH_TWIN], skip: torchReason },
];

describe('[slow] soup probe --exec --try: what the timing runs show', { timeout: 120_000 }, () => {
  for (const twin of twins) {
    if (twin.skip) console.log(`skipped: the ${twin.name} scenario (${twin.skip})`);
    it.skipIf(twin.skip !== null)(
      `${twin.name}: a configuration whose trainer stops after 3 steps is not timed and never chosen`,
      async () => {
        // stop=3 runs 3 of the 5 and 9 steps asked: the slope through 1, 3, 3 steps of 120 ms reads as a step 4×
        // faster, clear of the start-up noise.
        const r = await tune(twin.program, '--stop_after {stop} --per_sample_mib 1 --step_ms 100 --sample_ms 10', [
          '--global-batch-size',
          '2',
          '--start',
          '2',
          '--try',
          'stop=3,0',
          '--time-steps',
          '4',
        ]);
        expect(r.code, r.stderr).toBe(0);
        const t = (JSON.parse(r.stdout) as TuneJson).tune;
        expect(t.rows[t.chosen]!.label).toBe('stop=0');
        const stopped = t.rows.find((row) => row.label === 'stop=3')!;
        expect(stopped.samplesPerSecond).toBeNull();
        expect(stopped.note).toMatch(/^not timed: the runs of 1, 5, 9 steps took .* printed \d+, \d+, \d+ characters/);
      },
    );
  }

  it('Node twin: a configuration whose peak grows past the budget in a longer run is timed at the next divisor', {
    timeout: 120_000,
  }, async () => {
    // 64 MiB a sample, 16 MiB more a sample every step after the first. Budget 320 MiB over a bare
    // node: m = 4 fits one step (256) but not three (384); m = 2 fits five (256).
    const bare = await runProcess(process.execPath, ['-e', 'console.log(process.memoryUsage().rss)'], {
      timeoutMs: 60_000,
    });
    const budget = Math.round(Number(bare.stdout.trim()) + 320 * MiB);
    const r = await tune(
      [process.execPath, NODE_TWIN],
      '--per_sample_mib 64 --grow_per_sample_mib {grow} --step_ms 80 --sample_ms 0',
      ['--global-batch-size', '4', '--start', '4', '--budget', `${budget}B`, '--try', 'grow=16', '--time-steps', '2'],
    );
    expect(r.code, r.stderr).toBe(0);
    const row = (JSON.parse(r.stdout) as TuneJson).tune.rows[0]!;
    expect(row.microBatchSize).toBe(2);
    expect(row.samplesPerSecond).not.toBeNull();
    expect(row.note).toMatch(/^re-fitted at 2: a longer run at 4 went over the memory/);
    expect(r.stderr + r.stdout).toMatch(
      /timing run of 3 steps failed: over the budget over 3 steps .* at micro-batch 4; timing it at 2/,
    );
  });
});
