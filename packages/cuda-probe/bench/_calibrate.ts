// A memory budget placed from this machine's own measurements instead of a fixed number of MiB:
// one step's growth differs between machines (allocator, BLAS, thread pools), so a fixed budget can
// be below a single sample somewhere (NoBatchFitsError) and above the ceiling elsewhere.
// Two unbudgeted trials, at batch 1 and at `targetBatch`, give the growth at one sample and the growth
// per sample up to the target (measured there: an arena can grow in steps, so a slope taken from
// small batches would miss them); the budget then puts the fit edge half a sample above the target.
import { type CreateTrainStepProbeOptions, createTrainStepProbe } from '../src/index';

const MiB = 2 ** 20;
const round = (x: number): number => Math.round(x * 10) / 10;

export interface CalibratedBudget {
  budgetBytes: number;
  /** The batch the budget aims the fit edge at. */
  targetBatch: number;
  peakAtOneMiB: number;
  /** The unbudgeted peak at `targetBatch` (at 2 when the target is 1). */
  peakAtTargetMiB: number;
  perSampleMiB: number;
}

export async function calibrateBudget(
  opts: Pick<CreateTrainStepProbeOptions, 'spec' | 'intraOpNumThreads'> & { targetBatch: number },
): Promise<CalibratedBudget> {
  // Cold children (a fresh one per trial, waited for until it exits): nothing is left running.
  const probe = createTrainStepProbe({
    spec: opts.spec,
    ...(opts.intraOpNumThreads !== undefined ? { intraOpNumThreads: opts.intraOpNumThreads } : {}),
    budgetBytes: 8 * 1024 * MiB,
    timeoutMs: 300_000,
    env: { ...process.env, SOUP_PROBE_WARM: '0', SOUP_PROBE_END_ON_RESULT: '0' },
  });
  const at = Math.max(2, opts.targetBatch);
  const one = await probe(1);
  const target = await probe(at);
  if (!one.fits || one.peakBytes === undefined || !target.fits || target.peakBytes === undefined) {
    throw new Error(
      `budget calibration: an unbudgeted step did not complete (batch 1: ${one.reason}, batch ${at}: ${target.reason})`,
    );
  }
  // Measurement noise can hide the per-sample growth of a small model: never assume less than 1 %
  // of the one-sample step per sample, so the edge still lands near the target.
  const perSample = Math.max((target.peakBytes - one.peakBytes) / (at - 1), one.peakBytes / 100);
  return {
    budgetBytes: Math.round(one.peakBytes + (opts.targetBatch - 0.5) * perSample),
    targetBatch: opts.targetBatch,
    peakAtOneMiB: round(one.peakBytes / MiB),
    peakAtTargetMiB: round(target.peakBytes / MiB),
    perSampleMiB: round(perSample / MiB),
  };
}
