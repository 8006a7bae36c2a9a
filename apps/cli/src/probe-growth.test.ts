// soup probe --exec with {probe_steps}: each trial runs three steps, so memory that grows after the first step is in
// the verdict, and the line after the search says what steps 2–3 added at the answer. Real children: the known-cost
// trainer (64 MiB a sample, 32 more a sample at each later step). Node twin always; the PyTorch twin where `import
// torch` works.
import { runNode, runProcess, useTempDir } from '@soup/test-utils';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PYTHON, SOUP_BIN, torchMissing } from '../test/run-helpers';

const MiB = 2 ** 20;
const twin = (ext: string) =>
  fileURLToPath(new URL(`../../../examples/known-cost-trainer/train.${ext}`, import.meta.url));

/** The trainer's resident size holding nothing (its interpreter and imports): the budget sits on top of it. */
async function bareBytes(program: string[]): Promise<number> {
  const code =
    program[0] === PYTHON
      ? `import resource, runpy, sys; sys.argv = ['train.py', '--micro_batch_size', '0']; runpy.run_path(` +
        `${JSON.stringify(program[1])}, run_name='__main__'); print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)`
      : null;
  const r =
    code === null
      ? await runProcess(process.execPath, ['-e', 'console.log(process.memoryUsage().rss / 1024)'], {
          timeoutMs: 60_000,
        })
      : await runProcess(PYTHON, ['-c', code], { timeoutMs: 60_000 });
  expect(r.code, r.stderr).toBe(0);
  return Number(r.stdout.trim().split('\n').pop()) * 1024;
}

const torchSkip = await torchMissing();
const twins = [
  { name: 'Node twin', program: [process.execPath, twin('mjs')], skip: null as string | null },
  { name: 'PyTorch twin', program: [PYTHON, twin('py')], skip: torchSkip },
];

describe('soup probe --exec with {probe_steps}', { timeout: 120_000 }, () => {
  for (const t of twins) {
    if (t.skip) console.log(`skipped: the ${t.name} ({probe_steps} probe): ${t.skip}`);
    it.skipIf(t.skip !== null)(`${t.name}: fits over three steps, and says what steps 2–3 added`, async () => {
      const cwd = useTempDir();
      // One step of 4 holds 256 MiB (fits 300); three steps of 4 hold 512 and of 2 hold 256: the answer is 2.
      const budget = Math.round((await bareBytes(t.program)) + 300 * MiB);
      const command = [
        ...t.program,
        '--micro_batch_size {batch_size} --max_steps {probe_steps} --per_sample_mib 64 --grow_per_sample_mib 32',
      ].join(' ');
      const r = await runNode(
        [SOUP_BIN, 'probe', '--exec', command, '--budget', `${budget}B`, '--start', '4', '--ceiling', '4', '--json'],
        { cwd, timeoutMs: 100_000, env: { PATH: process.env.PATH, HOME: cwd, NO_COLOR: '1' } },
      );
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout) as {
        batch_size: number;
        step_growth: { steps: number; growth_bytes: number | null };
      };
      expect(out.batch_size).toBe(2);
      const growth = out.step_growth.growth_bytes!;
      expect(out.step_growth.steps).toBe(3);
      // 2 × 32 MiB a sample at m = 2: 128 MiB, give or take the sampling and the runtime.
      expect(growth / MiB).toBeGreaterThan(100);
      expect(growth / MiB).toBeLessThan(160);
      expect(r.stderr).toMatch(
        /soup: memory over the trial's 3 steps: peak \d+ MiB, \d+ MiB after one step \(\+\d+ MiB in steps 2–3\)/,
      );
    });
  }
});
