// A trainer command that takes {probe_steps} is probed over PROBE_STEPS steps, not one: memory that grows after the
// first step (a data-dependent peak, a cache filling, an optimizer state allocated at its first update) is then in
// the verdict. At the answer, one trial of a single step gives the growth: what the later steps added.
import { formatBytes } from '@soup/batch-probe';
import type { ChildProbeFn } from '@soup/cuda-probe';

/** Steps each probe trial runs where the command takes {probe_steps} (--try's fits run one; their timing runs more). */
export const PROBE_STEPS = 3;

/** `command` with {probe_steps} filled (absent: left as it is). */
export const withProbeSteps = (command: string, steps: number = PROBE_STEPS): string =>
  command.replaceAll('{probe_steps}', String(steps));

/** What the steps after the first added to the peak at the answer. */
export interface StepGrowth {
  /** Steps of the trials that found the answer. */
  steps: number;
  /** The answer's peak over those steps, and over one step (null: not measured). */
  peakBytes: number | null;
  oneStepPeakBytes: number | null;
  /** peakBytes − oneStepPeakBytes (null: either unknown). */
  growthBytes: number | null;
  /** Why the growth is unknown (null: known). */
  unknown: string | null;
}

/**
 * The growth at `batchSize`, whose trial over PROBE_STEPS steps peaked at `peakBytes`: one more trial of the same
 * command with {probe_steps} = 1 (`oneStep`, a probe of that command) at the same size.
 */
export async function stepGrowth(o: {
  oneStep: ChildProbeFn;
  batchSize: number;
  peakBytes: number | null;
}): Promise<StepGrowth> {
  const base = { steps: PROBE_STEPS, peakBytes: o.peakBytes };
  if (o.peakBytes === null)
    return { ...base, oneStepPeakBytes: null, growthBytes: null, unknown: 'no peak was measured (pass --budget)' };
  const one = await o.oneStep(o.batchSize);
  if (one.reason !== 'fit' || one.peakBytes === undefined)
    return {
      ...base,
      oneStepPeakBytes: null,
      growthBytes: null,
      unknown:
        `the one-step trial at ${o.batchSize} ` +
        `${one.reason === 'fit' ? 'measured no peak' : `ended ${one.reason}`}`,
    };
  return { ...base, oneStepPeakBytes: one.peakBytes, growthBytes: o.peakBytes - one.peakBytes, unknown: null };
}

/** The growth as one line: the peak over the trial's steps, after one step, and what steps 2 to N added. */
export function describeStepGrowth(g: StepGrowth): string {
  return g.growthBytes === null
    ? `memory growth over the trial's ${g.steps} steps: unknown (${g.unknown})`
    : `memory over the trial's ${g.steps} steps: peak ${formatBytes(g.peakBytes)}, ` +
        `${formatBytes(g.oneStepPeakBytes)} after one step ` +
        `(${g.growthBytes >= 0 ? '+' : '−'}${formatBytes(Math.abs(g.growthBytes))} in steps 2–${g.steps})`;
}
