// The `predictive` section of the batch-probe bench: today's refine against the predictive
// search on fake probes whose step peak follows a known model, over every edge 1..1024
// (ceiling 1024, start 8), plus the real ORT CPU probe at two geometries, run by a script of
// @soup/cuda-probe spawned by path (batch-probe must not depend on cuda-probe: cuda-probe
// already depends on batch-probe).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { probeBatchSize, type ProbeFn } from '../src/index';

const MiB = 2 ** 20;
const EDGES = 1024;
const CEILING = 1024;
const START = 8;
const A = 2048 * MiB; // weights, optimizer state, runtime: the part that does not grow with the batch
const C = 6 * MiB; // activations per sample

export interface SearchStats {
  medianTrials: number;
  maxTrials: number;
  meanTrials: number;
  exactRate: number;
}

interface FakeCase {
  name: string;
  what: string;
  peak: (b: number) => number;
  /** Budget that puts the edge at `k` (about half a sample above peak(k)). */
  budgetFor: (k: number) => number;
}

// A deterministic value in [-1, 1] per size: the same size always measures the same.
function jitter(b: number): number {
  let x = (b * 2654435761) >>> 0;
  x ^= x >>> 16;
  x = Math.imul(x, 2246822507) >>> 0;
  x ^= x >>> 13;
  return ((x >>> 0) / 0xffffffff) * 2 - 1;
}

const linear = (b: number) => A + C * b;
const roundUp = (step: number) => (b: number) => Math.ceil(linear(b) / step) * step;
const Q = C / 1024; // attention: the quadratic term equals the linear one at b = 1024

export const FAKE_CASES: FakeCase[] = [
  { name: 'linear', what: 'peak = a + c·b', peak: linear, budgetFor: (k) => linear(k) + C / 2 },
  {
    name: 'noisy',
    what: 'a + c·b, each size measured ±3 % (fixed per size)',
    peak: (b) => linear(b) * (1 + 0.03 * jitter(b)),
    budgetFor: (k) => linear(k) + C / 2,
  },
  {
    name: 'steps-2MiB',
    what: 'a + c·b rounded up to 2 MiB allocator blocks',
    peak: roundUp(2 * MiB),
    budgetFor: (k) => roundUp(2 * MiB)(k) + C / 2,
  },
  {
    name: 'steps-20MiB',
    what: 'a + c·b rounded up to 20 MiB allocator blocks',
    peak: roundUp(20 * MiB),
    budgetFor: (k) => roundUp(20 * MiB)(k),
  },
  {
    name: 'quadratic',
    what: 'a + c·b + q·b² (attention)',
    peak: (b) => linear(b) + Q * b * b,
    budgetFor: (k) => linear(k) + Q * k * k + C / 2,
  },
];

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}
const round = (x: number, d: number) => Math.round(x * 10 ** d) / 10 ** d;

async function run(c: FakeCase, predict: boolean): Promise<SearchStats> {
  const trials: number[] = [];
  let exact = 0;
  for (let k = 1; k <= EDGES; k++) {
    const budget = c.budgetFor(k);
    const fits = (b: number) => c.peak(b) <= budget;
    if (!fits(1)) continue;
    const probe: ProbeFn = async (b) => ({ fits: fits(b), peakBytes: c.peak(b), budgetBytes: budget });
    const r = await probeBatchSize(probe, { start: START, ceiling: CEILING, predict });
    trials.push(r.trials.length);
    // Exact: the answer fits and the next size does not (or it is the ceiling), by the oracle.
    if (fits(r.batchSize) && (r.batchSize === CEILING || !fits(r.batchSize + 1))) exact += 1;
  }
  return {
    medianTrials: median(trials),
    maxTrials: Math.max(...trials),
    meanTrials: round(trials.reduce((s, x) => s + x, 0) / trials.length, 2),
    exactRate: round(exact / trials.length, 4),
  };
}

interface RealRun {
  batchSize: number;
  trials: number;
  bound: string;
  sizes: number[];
  seconds: number;
}

function realRuns(
  skip: boolean,
):
  | { cases: Array<{ name: string; refine: RealRun; predictive: RealRun } & Record<string, unknown>> }
  | { skipped: string } {
  if (skip) return { skipped: '--no-real' };
  const repo = join(import.meta.dirname, '..', '..', '..');
  const script = join(repo, 'packages', 'cuda-probe', 'bench', 'predictive-real.ts');
  const tsx = join(repo, 'node_modules', '.bin', 'tsx');
  if (!existsSync(script) || !existsSync(tsx)) return { skipped: `${script} or ${tsx} is missing` };
  const r = spawnSync(tsx, [script], { encoding: 'utf8', timeout: 600_000, cwd: repo });
  if (r.status !== 0)
    return {
      skipped:
        `the real ORT probe failed (exit ${r.status}): ` +
        `${(r.stderr || r.error?.message || '').trim().split('\n').slice(-3).join(' | ')}`,
    };
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as {
    cases: Array<{ name: string; refine: RealRun; predictive: RealRun }>;
  };
}

export async function predictiveSection(opts: { real: boolean }) {
  const cases: Array<{ name: string; what: string; refine: SearchStats; predictive: SearchStats }> = [];
  for (const c of FAKE_CASES) {
    const refine = await run(c, false);
    const predictive = await run(c, true);
    cases.push({ name: c.name, what: c.what, refine, predictive });
  }
  const real = realRuns(!opts.real);
  const realCases =
    'cases' in real
      ? real.cases.map((c) => {
          const stat = (x: RealRun): SearchStats => ({
            medianTrials: x.trials,
            maxTrials: x.trials,
            meanTrials: x.trials,
            exactRate: x.bound === 'exact' || x.bound === 'capped' ? 1 : 0,
          });
          return {
            ...c,
            refine: { ...stat(c.refine), ...c.refine },
            predictive: { ...stat(c.predictive), ...c.predictive },
          };
        })
      : [];
  const all = [...cases, ...realCases];
  const byName = (n: string) => cases.find((c) => c.name === n)!;
  const worse = all
    .filter((c) => c.predictive.medianTrials > c.refine.medianTrials || c.predictive.maxTrials > c.refine.maxTrials)
    .map((c) => c.name);
  const goal = <T extends object>(met: boolean, facts: T) => ({
    status: met ? ('met' as const) : ('not met' as const),
    met,
    ...facts,
  });
  const goals = {
    medianTrialsAtMost4OnLinearAndNoisy: goal(
      byName('linear').predictive.medianTrials <= 4 && byName('noisy').predictive.medianTrials <= 4,
      {
        linear: byName('linear').predictive.medianTrials,
        noisy: byName('noisy').predictive.medianTrials,
      },
    ),
    exactRateOneEverywhere: goal(
      all.every((c) => c.predictive.exactRate === 1),
      { below: all.filter((c) => c.predictive.exactRate !== 1).map((c) => c.name) },
    ),
    noCaseWorseThanRefine: goal(worse.length === 0, { worse }),
  };
  return {
    setup: {
      edges: `1..${EDGES} (budget placed so that the edge is at each)`,
      start: START,
      ceiling: CEILING,
      aBytes: A,
      cBytesPerSample: C,
    },
    cases,
    real: 'cases' in real ? { cases: realCases } : real,
    goals,
  };
}
