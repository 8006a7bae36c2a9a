// `soup plan`'s wall time told apart from the tuner's path. The path (which configurations and micro-batches the
// tuner timed, and which it stopped early) follows noisy step times, and one command's time moves with it by ±15 %;
// two sides compared by their medians alone then differ by the paths they happened to take. So each run records its
// path, and the sides are also compared path by path, only where both took the same one.
import { makeTempDir, runNode } from '@soup/test-utils';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { median } from './_median';
import { timedSoup } from './_timed-soup';

export interface PlanRun {
  /** Spawn to exit. */
  seconds: number;
  /** Spawn to the last fit line (`probe: N trials in …`): start-up and the fits, before any timing. */
  fitsSeconds: number;
  /** The rows the tuner timed, in its table's order: `config@m`, `~` where it stopped early. */
  path: string;
}

interface PlanRow {
  values: Record<string, string>;
  microBatchSize: number | null;
  stepMs: number | null;
  note?: string | null;
}

/** The tuner's path from its rows: the timed ones, each `values@m`, with `~` where it stopped early. */
export function pathOf(rows: readonly PlanRow[]): string {
  return rows
    .filter((r) => r.stepMs !== null && r.microBatchSize !== null)
    .map(
      (r) =>
        `${Object.values(r.values).join(',')}@${r.microBatchSize}${r.note?.startsWith('stopped early') ? '~' : ''}`,
    )
    .join(' ');
}

/** The small template as the tune bench plans it: one thread, so the step times are not the scheduler's. */
export async function initSmall(bin: string, cwd: string, env: NodeJS.ProcessEnv): Promise<void> {
  const init = await runNode([bin, 'init', '--template', 'small'], { cwd, env, timeoutMs: 60_000 });
  if (init.code !== 0) throw new Error(`soup init failed: ${init.stderr}`);
  writeFileSync(
    join(cwd, 'soup.yaml'),
    readFileSync(join(cwd, 'soup.yaml'), 'utf8').replace(/^( {2}seed: .*)$/m, '$1\n  threads: 1'),
  );
}

/** One `soup plan --budget <budget> --no-cache --json` of one side's soup in a fresh folder. */
export async function planOnce(bin: string, budgetMiB = 300): Promise<PlanRun> {
  const t = makeTempDir('soup-plan-paths-');
  try {
    const env = { PATH: process.env.PATH, HOME: t.dir, NO_COLOR: '1' };
    await initSmall(bin, t.dir, env);
    const r = await timedSoup([bin, 'plan', '--budget', `${budgetMiB}MiB`, '--no-cache', '--json'], {
      cwd: t.dir,
      env,
      line: /probe: \d+ trials? in/,
    });
    if (r.code !== 0) throw new Error(`soup plan (${bin}) exited ${r.code}:\n${r.stderr.slice(-2000)}`);
    const rows = (JSON.parse(r.stdout) as { tune: { rows: PlanRow[] } }).tune.rows;
    return { seconds: r.ms / 1000, fitsSeconds: r.lastLineMs / 1000, path: pathOf(rows) };
  } finally {
    t.cleanup();
  }
}

export interface SamePath {
  path: string;
  before: number[];
  after: number[];
  /** Median after / median before, on this path. */
  ratio: number;
}

/**
 * The paths both sides took, each with its seconds and its ratio of medians; `pooled` is their geometric mean, each
 * path weighted by the runs it has on its scarcer side (null where the sides shared no path).
 */
export function samePaths(
  before: readonly PlanRun[],
  after: readonly PlanRun[],
): { paths: SamePath[]; pooled: number | null; runsCompared: number } {
  const byPath = (runs: readonly PlanRun[]): Map<string, number[]> => {
    const m = new Map<string, number[]>();
    for (const r of runs) m.set(r.path, [...(m.get(r.path) ?? []), r.seconds]);
    return m;
  };
  const b = byPath(before);
  const a = byPath(after);
  const paths: SamePath[] = [];
  for (const [path, bs] of b) {
    const as = a.get(path);
    if (as) paths.push({ path, before: bs, after: as, ratio: median(as) / median(bs) });
  }
  let logSum = 0;
  let weight = 0;
  for (const p of paths) {
    const w = Math.min(p.before.length, p.after.length);
    logSum += w * Math.log(p.ratio);
    weight += w;
  }
  return { paths, pooled: weight === 0 ? null : Math.exp(logSum / weight), runsCompared: weight };
}
