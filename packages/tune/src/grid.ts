// The exhaustive grid that `gradient_checkpointing: auto` is checked against (by its test and the
// bench): every tier × every divisor m of G, its peak from one probe child (the tuner's own judge)
// and, where it fits, its step timed by the tuner's own method. Not used by the tuner itself.
import { divisorsOf } from '@soup/batch-probe';
import { createTrainStepProbe } from '@soup/cuda-probe';
import { samplesPerSecondOf, timeUpdate, type UpdateTiming } from './global-step';
import { type StepGptSpec, timeAlternately, timeTrainStep, type StepToTime } from './step-timing';
import { TRAIN_TIERS } from './tune-train';

/** What the grid and its referee time: a model at G, its threads, and the blocks each tier recomputes. */
export interface GridModel {
  spec: StepGptSpec;
  globalBatchSize: number;
  /** ONNX Runtime's intra-op threads (0: its default). */
  threads: number;
  /** The blocks a tier (TRAIN_TIERS) recomputes. */
  recomputeOf(tier: (typeof TRAIN_TIERS)[number]): string[];
}

export interface GridPoint {
  /** 'false' | 'selective' | 'full' */
  tier: string;
  m: number;
  /** The probe child's measured peak; null when it was not measured. */
  peakBytes: number | null;
  /** Whether it fit `budgetBytes` (the largest budget asked for). */
  fits: boolean;
  samplesPerSecond: number | null;
}

/** The grid and its referee time on the CPU (the bench and the tests have no GPU to compare with). */
const ON_CPU = { executionProvider: 'cpu', deviceId: 0 } as const;

const tierOf = (name: string): (typeof TRAIN_TIERS)[number] => TRAIN_TIERS.find((g) => (g ?? 'false') === name)!;

/**
 * The step the grid and its referee time: soup.yaml's model and threads on the CPU, no offload, at
 * micro-batch `m`; below G a micro-step, as the tuner times it.
 */
const cpuStep = (o: GridModel & { cwd: string }, recompute: string[], m: number): StepToTime => ({
  ...ON_CPU,
  microStep: m < o.globalBatchSize,
  spec: o.spec,
  recompute,
  batchSize: m,
  threads: o.threads,
  offload: null,
  cwd: o.cwd,
});

/** The accumulate path's update, as the tuner times it (timeUpdate at m = 1, no checkpointing); null at G = 1. */
const updateFor = (o: GridModel & { cwd: string }): Promise<UpdateTiming | null> =>
  o.globalBatchSize < 2 ? Promise.resolve(null) : timeUpdate(cpuStep(o, o.recomputeOf(null), 1));

/**
 * Every tier × divisor: one probe child under `budgetBytes` (the largest budget the caller checks;
 * a smaller budget's fits are the points whose peak is at or under it), then `steps` timed steps
 * in this process where it fits. Samples/s at G as the tuner counts them: G over a micro-steps and
 * the update once (samplesPerSecondOf, the update timed once here).
 */
export async function measureTrainGrid(
  o: GridModel & {
    budgetBytes: number;
    steps: number;
    cwd: string;
    env: NodeJS.ProcessEnv;
  },
): Promise<GridPoint[]> {
  const G = o.globalBatchSize;
  const threads = o.threads;
  const update = await updateFor(o);
  const points: GridPoint[] = [];
  for (const g of TRAIN_TIERS) {
    const recompute = o.recomputeOf(g);
    const probe = createTrainStepProbe({
      device: 'cpu',
      spec: o.spec,
      plan: recompute,
      budgetBytes: o.budgetBytes,
      ...(threads > 0 ? { intraOpNumThreads: threads } : {}),
      cwd: o.cwd,
      env: o.env,
    });
    for (const m of divisorsOf(G)) {
      const p = await probe(m);
      let sps: number | null = null;
      if (p.fits)
        sps = samplesPerSecondOf(
          G,
          m,
          (await timeTrainStep({ ...cpuStep(o, recompute, m), steps: o.steps })).stepMs,
          update,
        );
      points.push({
        tier: g ?? 'false',
        m,
        peakBytes: p.peakBytes ?? null,
        fits: p.fits,
        samplesPerSecond: sps,
      });
    }
  }
  return points;
}

/** The grid's fastest point that fits `budgetBytes` (a fit under the grid's budget and a peak at or under this one). */
export function gridBest(points: readonly GridPoint[], budgetBytes: number): GridPoint {
  const ok = points.filter(
    (p) => p.fits && p.samplesPerSecond !== null && p.peakBytes !== null && p.peakBytes <= budgetBytes,
  );
  if (ok.length === 0) throw new Error(`no grid point fits ${budgetBytes} bytes`);
  return ok.reduce((a, b) => (b.samplesPerSecond! > a.samplesPerSecond! ? b : a));
}

/**
 * Samples/s of two points, a referee for the choice against the grid's best (the best of many noisy
 * points is biased up: the largest of 14 draws, each ±3 %, sits about 4 % above its true value).
 * `rounds` times, each with two new sessions: both warmed up, then `steps` rounds of one step each,
 * alternately (timeAlternately: what the machine does meanwhile falls on both alike); each point's
 * figure is the median of its rounds. Timed one after the other instead, the same two points
 * swung 0.96–1.06 apart in three rounds where side by side they stayed within 0.997–1.03
 * (small template, m = 8, no checkpointing against selective).
 */
export async function headToHead(
  o: GridModel & {
    steps: number;
    rounds: number;
    cwd: string;
  },
  a: { tier: string; m: number },
  b: { tier: string; m: number },
): Promise<[number, number]> {
  const G = o.globalBatchSize;
  const stepOf = (p: { tier: string; m: number }): StepToTime => cpuStep(o, o.recomputeOf(tierOf(p.tier)), p.m);
  const update = await updateFor(o);
  const runs: [number[], number[]] = [[], []];
  for (let r = 0; r < o.rounds; r++) {
    const t = await timeAlternately(stepOf(a), stepOf(b), o.steps);
    for (const [i, p] of [a, b].entries()) runs[i]!.push(samplesPerSecondOf(G, p.m, t[i]!.stepMs, update));
  }
  const median = (xs: number[]): number => [...xs].sort((x, y) => x - y)[(xs.length - 1) >> 1]!;
  return [median(runs[0]), median(runs[1])];
}
