// The `real` section of the batch-probe bench: the Node proportional trainer as a real child per
// trial, under a real RSS budget, three budgets (above the trainer's measured baseline) × linear and
// quadratic memory, bisection vs the predictive search. Run by a script of @soup/cuda-probe spawned
// by path (batch-probe must not depend on cuda-probe). `--no-real` skips it.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

interface Stat {
  medianTrials: number;
  maxTrials: number;
  exactRate: number;
  answers: number[];
}
interface RealCase {
  name: string;
  budgetBytes: number;
  consensus: number;
  refine: Stat;
  predictive: Stat;
}

export function realSection(opts: { skip: boolean; repeats: number }) {
  if (opts.skip) return { skipped: '--no-real' };
  const repo = join(import.meta.dirname, '..', '..', '..');
  const script = join(repo, 'packages', 'cuda-probe', 'bench', 'predictive-command.ts');
  const tsx = join(repo, 'node_modules', '.bin', 'tsx');
  if (!existsSync(script) || !existsSync(tsx)) return { skipped: `${script} or ${tsx} is missing` };
  const r = spawnSync(tsx, [script, '--repeats', String(opts.repeats)], {
    encoding: 'utf8',
    timeout: 1_800_000,
    cwd: repo,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (r.status !== 0)
    return { skipped: `the real command probe failed (exit ${r.status}): ${(r.error?.message ?? '').trim()}` };
  const data = JSON.parse(r.stdout.trim().split('\n').pop()!) as {
    cases: RealCase[];
    repeats: number;
    trainer: string;
    /** The trainer's resident size holding nothing, measured first: every budget sits above it. */
    baselineMiB: number;
  };
  const cases = data.cases;
  const goal = <T extends object>(met: boolean, facts: T) => ({
    status: met ? ('met' as const) : ('not met' as const),
    met,
    ...facts,
  });
  const medians = cases.map((c) => c.predictive.medianTrials);
  const worse = cases
    .filter((c) => c.predictive.medianTrials > c.refine.medianTrials || c.predictive.maxTrials > c.refine.maxTrials)
    .map((c) => c.name);
  return {
    trainer: data.trainer,
    repeats: data.repeats,
    baselineMiB: data.baselineMiB,
    cases,
    goals: {
      exactEverywhere: goal(
        cases.every((c) => c.predictive.exactRate === 1 && c.refine.exactRate === 1),
        {
          below: cases.filter((c) => c.predictive.exactRate !== 1 || c.refine.exactRate !== 1).map((c) => c.name),
        },
      ),
      predictiveMedianAtMost5: goal(
        medians.every((m) => m <= 5),
        { medians },
      ),
      neverMoreThanBisection: goal(worse.length === 0, { worse }),
    },
  };
}
