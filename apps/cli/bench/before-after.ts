// Bench: this tree against another commit of soup, side by side in one run. The other commit is checked out in a
// temporary git worktree, installed and built; then, run after run, each side in turn (A B, then B A, so a load
// swing on a shared machine falls on both alike) measures:
//   - `soup train` on a small GPT (1 thread, no store pushes in the timed steps): the training throughput
//     (RUN_JSON tokens_per_s, time inside steps) and the time from starting soup to its first printed step
//     line (step 2 of 12: two steps included);
//   - its own `bench/run.ts --only run`: runOverheadRatio (a trainer under soup run / alone);
//   - this tree's `bench/run.ts --only tune --soup <its bin>` (one grid, budget and clock for both): tunedOverBestRatio
//     and tuneCostRatio (exec, train and, where torch imports, exec-torch-sq), and the two sides of the cost ratio
//     (tuneSeconds, gridSeconds: shown, not judged);
//   - `plan` (bench/plan-paths.ts): `soup plan` alone on the small template, its wall time and the tuner's path
//     (the rows it timed), then the sides compared path by path where both took the same one: the command's time
//     moves with the path by ±15 %, which medians over a few runs do not average out.
// Each figure is the median of the runs (every run listed), and after/before is judged against 5 %.
//   npm run bench:before-after -w @soup/cli -- --before <git ref> [--after <git ref>] [--runs 3]
//     [--parts train,run,tune,plan] [--tune-modes exec,train,exec-torch-sq] [--keep]
// Prints a table, writes bench-results/before-after.json (--json: the JSON on stdout instead of the table).
import { makeTempDir, runProcess } from '@soup/test-utils';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from './_median';
import { timedSoup } from './_timed-soup';
import { type PlanRun, planOnce, samePaths } from './plan-paths';

const flag = (name: string): string | null =>
  process.argv.includes(name) ? (process.argv[process.argv.indexOf(name) + 1] ?? null) : null;
const json = process.argv.includes('--json');
const keep = process.argv.includes('--keep');
const before = flag('--before');
if (before === null) throw new Error('--before <git ref> is required: the commit to compare this tree with');
const runs = Number(flag('--runs') ?? '3');
if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs must be a whole number, 1 or more (got ${runs})`);
const parts = (flag('--parts') ?? 'train,run,tune').split(',');
// --tune-modes exec,train: only those modes of the tune part (bench/run.ts --modes); all three by default.
const tuneModes = flag('--tune-modes');
for (const p of parts) if (!['train', 'run', 'tune', 'plan'].includes(p)) throw new Error(`--parts: unknown part ${p}`);
const log = (line: string): void => void (json ? process.stderr : process.stdout).write(`${line}\n`);

const root = fileURLToPath(new URL('../../../', import.meta.url));
// --after <ref>: compare two commits, neither of them this tree (e.g. to tell which of two spans of history moved
// a figure); without it the after side is this tree as it is.
const afterRef = flag('--after');

function sh(cmd: string, args: string[], cwd: string): void {
  execFileSync(cmd, args, { cwd, stdio: ['ignore', json ? 2 : 'inherit', 'inherit'] });
}

/** A commit checked out in a temporary worktree, installed and built (reused while it is there). */
function checkout(ref: string): { sha: string; dir: string } {
  const sha = execFileSync('git', ['rev-parse', ref], { cwd: root, encoding: 'utf8' }).trim();
  const dir = join(tmpdir(), `soup-before-${sha.slice(0, 12)}`);
  if (!existsSync(join(dir, 'apps', 'cli', 'bin', 'soup.js')) || !existsSync(join(dir, 'node_modules'))) {
    log(`checking out ${ref} (${sha.slice(0, 12)}) in ${dir}, installing and building`);
    if (!existsSync(dir)) sh('git', ['worktree', 'add', '--detach', dir, sha], root);
    sh('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund'], dir);
    sh('npm', ['run', 'build'], dir);
  }
  return { sha, dir };
}

const beforeSide = checkout(before);
const afterSide = afterRef === null ? null : checkout(afterRef);
const sides = [
  { name: 'before', dir: beforeSide.dir },
  { name: 'after', dir: afterSide?.dir ?? root },
] as const;
type Side = (typeof sides)[number]['name'];

const config = (corpus: string): string => `base: soup/bench-before-after
model: {vocab_size: 256, d_model: 128, n_heads: 4, n_layers: 4, d_ff: 512}
data:
  train: ${join(corpus, 'train.txt')}
  val: ${join(corpus, 'val.txt')}
  max_length: 128
training:
  steps: 12
  batch_size: 16
  micro_batch_size: 16
  lr: 0.003
  warmup_steps: 2
  threads: 1
  val_batches: 1
`;

/** One `soup train` of one side: tokens/s inside steps, and ms from starting soup to its first step line. */
async function trainOnce(dir: string): Promise<{ tokensPerS: number; firstStepMs: number }> {
  const t = makeTempDir('soup-before-after-');
  try {
    writeFileSync(join(t.dir, 'soup.yaml'), config(join(root, 'apps', 'cli', 'assets', 'corpus')));
    const bin = join(dir, 'apps', 'cli', 'bin', 'soup.js');
    const args = [bin, 'train', '-c', 'soup.yaml', '--output-dir', 'out', '--repo', `file://${join(t.dir, 'store')}`];
    const r = await timedSoup(args, {
      cwd: t.dir,
      env: { PATH: process.env.PATH, HOME: t.dir, NO_COLOR: '1', SOUP_BATCH_CACHE_PATH: join(t.dir, 'cache.json') },
      line: /^(soup: )?train: \d+\/\d+ \(/m,
    });
    const line = r.stdout.split('\n').find((l) => l.startsWith('RUN_JSON '));
    if (r.code !== 0 || !line) throw new Error(`soup train (${dir}) exited ${r.code}:\n${r.stderr.slice(-2000)}`);
    const json = JSON.parse(line.slice('RUN_JSON '.length)) as { tokens_per_s: number };
    return { tokensPerS: json.tokens_per_s, firstStepMs: Math.round(r.firstLineMs) };
  } finally {
    t.cleanup();
  }
}

/**
 * One run of a CLI bench, its JSON. `run`: the side's own `bench/run.ts --only run`. `tune`: this tree's
 * `bench/run.ts --only tune` with the side's soup (`--soup`), so that both sides' tuners are measured against one grid,
 * one budget and one clock: each side's own tune bench took its exec budget from its own process's RSS, which moves
 * with what that bench imports, and one fit trial more or fewer moved tuneCostRatio.exec by 10-20 %.
 */
async function cliBench(dir: string, only: 'run' | 'tune'): Promise<Record<string, unknown>> {
  const bench = only === 'tune' ? root : dir;
  const soupArgs =
    only === 'tune'
      ? ['--soup', join(dir, 'apps', 'cli', 'bin', 'soup.js'), ...(tuneModes ? ['--modes', tuneModes] : [])]
      : [];
  const r = await runProcess(
    process.execPath,
    [join(bench, 'node_modules', 'tsx', 'dist', 'cli.mjs'), 'bench/run.ts', '--json', '--only', only, ...soupArgs],
    { cwd: join(bench, 'apps', 'cli'), timeoutMs: 3_600_000 },
  );
  const last = r.stdout.trim().split('\n').at(-1) ?? '';
  if (r.code !== 0 || !last.startsWith('{')) throw new Error(`bench/run.ts --only ${only} for ${dir}:\n${r.stderr}`);
  return JSON.parse(last) as Record<string, unknown>;
}

type Metric =
  | 'tokensPerS'
  | 'firstStepMs'
  | 'runOverheadRatio'
  | 'planSeconds'
  | 'planFitsSeconds'
  | `${'tunedOverBestRatio' | 'tuneCostRatio' | 'tuneSeconds' | 'gridSeconds'}.${string}`;
const seen: Record<Side, Partial<Record<Metric, number[]>>> = { before: {}, after: {} };
const plans: Record<Side, PlanRun[]> = { before: [], after: [] };
const add = (side: Side, m: Metric, v: number): void => {
  const xs = seen[side][m] ?? [];
  xs.push(v);
  seen[side][m] = xs;
};

for (let run = 1; run <= runs; run++) {
  const order = run % 2 === 1 ? sides : [...sides].reverse();
  for (const s of order) {
    log(`run ${run}/${runs}: ${s.name}`);
    if (parts.includes('train')) {
      const t = await trainOnce(s.dir);
      add(s.name, 'tokensPerS', t.tokensPerS);
      add(s.name, 'firstStepMs', t.firstStepMs);
    }
    if (parts.includes('plan')) {
      const p = await planOnce(join(s.dir, 'apps', 'cli', 'bin', 'soup.js'));
      plans[s.name].push(p);
      add(s.name, 'planSeconds', Number(p.seconds.toFixed(2)));
      add(s.name, 'planFitsSeconds', Number(p.fitsSeconds.toFixed(2)));
      log(`  soup plan ${p.seconds.toFixed(2)} s (fits done at ${p.fitsSeconds.toFixed(2)} s), path ${p.path}`);
    }
    if (parts.includes('run')) add(s.name, 'runOverheadRatio', Number((await cliBench(s.dir, 'run')).runOverheadRatio));
    if (parts.includes('tune')) {
      const r = await cliBench(s.dir, 'tune');
      for (const key of ['tunedOverBestRatio', 'tuneCostRatio'] as const) {
        for (const [mode, v] of Object.entries(r[key] as Record<string, number>)) add(s.name, `${key}.${mode}`, v);
      }
      // The two sides of each cost ratio: the tuner's seconds and the grid's (a ratio moves with either).
      for (const row of r.tune as { mode: string; tuneSeconds: number; gridSeconds: number }[]) {
        add(s.name, `tuneSeconds.${row.mode}`, row.tuneSeconds);
        add(s.name, `gridSeconds.${row.mode}`, row.gridSeconds);
      }
    }
  }
}

// Which way is better for each figure, so "within 5 %" means "not more than 5 % worse".
const higherIsBetter = (m: string): boolean => m === 'tokensPerS' || m.startsWith('tunedOverBestRatio');
const rows = (Object.keys(seen.after) as Metric[]).map((m) => {
  const b = median(seen.before[m] ?? []);
  const a = median(seen.after[m] ?? []);
  const ratio = a / b;
  // planSeconds moves with the tuner's path: judged path by path below (planSamePath), shown here.
  const informational =
    m === 'firstStepMs' || m === 'planSeconds' || m.startsWith('tuneSeconds') || m.startsWith('gridSeconds');
  const within5 = informational ? null : higherIsBetter(m) ? ratio >= 0.95 : ratio <= 1.05;
  return {
    metric: m,
    before: b,
    after: a,
    afterOverBefore: Number(ratio.toFixed(3)),
    within5,
    each: {
      before: seen.before[m],
      after: seen.after[m],
    },
  };
});
const samePath = parts.includes('plan') ? samePaths(plans.before, plans.after) : null;
const result = {
  before: beforeSide.sha,
  after: afterSide?.sha ?? 'this tree',
  runs,
  parts,
  cpus: cpus().length,
  loadAverage1m: Number(loadavg()[0]!.toFixed(2)),
  rows,
  plans: parts.includes('plan') ? plans : undefined,
  planSamePath:
    samePath === null
      ? undefined
      : {
          ...samePath,
          pooled: samePath.pooled === null ? null : Number(samePath.pooled.toFixed(3)),
          within5: samePath.pooled === null ? null : samePath.pooled <= 1.05,
        },
};
mkdirSync(new URL('../bench-results/', import.meta.url), { recursive: true });
writeFileSync(new URL('../bench-results/before-after.json', import.meta.url), `${JSON.stringify(result, null, 2)}\n`);
log('');
log(`metric                      before (median)   after (median)   after/before   within 5 %   (runs: ${runs})`);
for (const r of rows) {
  log(
    `${r.metric.padEnd(27)} ${String(r.before).padEnd(17)} ${String(r.after).padEnd(16)} ` +
      `${String(r.afterOverBefore).padEnd(14)} ${r.within5 === null ? 'n/a' : r.within5 ? 'yes' : 'NO'}`,
  );
}
if (samePath !== null) {
  log('');
  log('soup plan, path by path (seconds, each run; after/before of the medians)');
  for (const p of samePath.paths) {
    log(`  ${p.path}`);
    const each = (xs: number[]): string => xs.map((x) => x.toFixed(2)).join(', ');
    log(`    before ${each(p.before)}  after ${each(p.after)}`);
    log(`    after/before ${p.ratio.toFixed(3)}`);
  }
  const only = (side: Side): number => plans[side].filter((r) => !samePath.paths.some((p) => p.path === r.path)).length;
  log(
    `  same path, pooled over ${samePath.runsCompared} pairs: ` +
      `${samePath.pooled === null ? 'no path taken by both sides' : samePath.pooled.toFixed(3)}` +
      `${samePath.pooled === null ? '' : samePath.pooled <= 1.05 ? '  within 5 %: yes' : '  within 5 %: NO'}; ` +
      `runs on a path the other side never took: before ${only('before')}, after ${only('after')}`,
  );
}
if (json) process.stdout.write(`${JSON.stringify(result)}\n`);
if (!keep) {
  for (const side of [beforeSide, afterSide]) {
    if (side === null) continue;
    sh('git', ['worktree', 'remove', '--force', side.dir], root);
    log(`removed ${side.dir} (--keep keeps it for the next run)`);
  }
}
