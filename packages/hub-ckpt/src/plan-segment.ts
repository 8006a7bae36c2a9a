import { InvalidCheckpointOptionError } from './errors';

export interface PlanSegmentOptions {
  /** Total optimizer steps of the run. */
  horizon: number;
  /** Push `ckpt/checkpoint-<n>` every this many steps (n a multiple of it). */
  pushEvery: number;
  /** Steps this session may run before stopping at a segment boundary; 0 runs to the horizon. @default 0 */
  stopAfterSteps?: number;
  /** Step this session starts from (the resumed step, 0 when fresh). @default 0 */
  startStep?: number;
}

export interface SegmentPlan {
  horizon: number;
  pushEvery: number;
  startStep: number;
  /** The step this session ends at. */
  stopStep: number;
  /** Steps after which this session pushes `ckpt/checkpoint-<step>`, ascending. A segment stop is always among them. */
  pushSteps: number[];
  /** True when the session stops before the horizon: a segment boundary a later session resumes from. */
  segmentStop: boolean;
  /** True when the session reaches the horizon: push `final/` with a terminal pointer at `stopStep`. */
  pushFinal: boolean;
}

function int(field: string, value: unknown, min: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
    throw new InvalidCheckpointOptionError(`${field} must be an integer >= ${min}, got ${JSON.stringify(value)}.`, {
      field,
    });
  }
  return value;
}

/**
 * Which steps push and how the session ends, from `{horizon, pushEvery, stopAfterSteps}`:
 * pushes at every multiple of `pushEvery` in (startStep, stopStep], plus the stop step itself when it
 * is a segment boundary (so the next session can resume exactly there); `final/` at the horizon.
 */
export function planSegment(opts: PlanSegmentOptions): SegmentPlan {
  const horizon = int('horizon', opts.horizon, 1);
  const pushEvery = int('pushEvery', opts.pushEvery, 1);
  const stopAfterSteps = int('stopAfterSteps', opts.stopAfterSteps ?? 0, 0);
  const startStep = int('startStep', opts.startStep ?? 0, 0);
  if (startStep > horizon) {
    throw new InvalidCheckpointOptionError(
      `startStep ${startStep} is past the horizon ${horizon}: the run is already over; check horizon.`,
      { field: 'startStep' },
    );
  }
  const stopStep = stopAfterSteps === 0 ? horizon : Math.min(horizon, startStep + stopAfterSteps);
  const segmentStop = stopStep < horizon;
  const pushSteps: number[] = [];
  for (let s = (Math.floor(startStep / pushEvery) + 1) * pushEvery; s <= stopStep; s += pushEvery) pushSteps.push(s);
  if (segmentStop && pushSteps[pushSteps.length - 1] !== stopStep) pushSteps.push(stopStep);
  return { horizon, pushEvery, startStep, stopStep, pushSteps, segmentStop, pushFinal: !segmentStop };
}
