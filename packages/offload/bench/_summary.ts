// The bench's per-mode summary: the largest batch under the cap, and the step at the fused step's largest batch F.
import { MODES, median, round, type Mode } from './_numbers';
import type { ChildReport, Trial } from './_capped-trials';

/** Summarises every mode from the search `trials` and the `timing` children at F (`timingRounds` of each). */
export function summarizeModes(p: {
  trials: Trial[];
  timing: Trial[];
  largest: Record<Mode, { batchSize: number; firstFailing: number | null }>;
  F: number;
  timingRounds: number;
}) {
  const { trials, timing, largest, F, timingRounds } = p;
  const timedAt = (mode: Mode): Trial[] => timing.filter((t) => t.mode === mode && t.batchSize === F && t.trained);
  const summary = (mode: Mode) => {
    const timed = timedAt(mode);
    const typical = timed.length
      ? [...timed].sort((a, b) => a.report!.stepMs - b.report!.stepMs)[Math.floor((timed.length - 1) / 2)]!
      : null;
    const atMax = trials.find((t) => t.mode === mode && t.batchSize === largest[mode].batchSize && t.trained) ?? null;
    const med = (pick: (r: ChildReport) => number | undefined): number | undefined => {
      const xs = timed.map((t) => pick(t.report!)).filter((x): x is number => x !== undefined);
      return xs.length ? round(median(xs)!) : undefined;
    };
    return {
      maxBatch: largest[mode].batchSize,
      firstFailingBatch: largest[mode].firstFailing,
      firstFailingOutcome:
        trials.find((t) => t.mode === mode && t.batchSize === largest[mode].firstFailing && !t.trained)?.outcome ??
        null,
      cgroupPeakMBAtMax: atMax?.cgroupPeakMB ?? null,
      atFusedMax:
        typical && timed.length === timingRounds
          ? {
              batchSize: F,
              stepMs: round(median(timed.map((t) => t.report!.stepMs))!),
              stepMsPerRound: timed.map((t) => round(t.report!.stepMs)),
              stepCpuMs: round(median(timed.map((t) => t.report!.stepCpuMs))!),
              cgroupPeakMB: round(median(timed.map((t) => t.cgroupPeakMB ?? Number.NaN))!),
              rssPeakMB: round(median(timed.map((t) => t.report!.peakRssMB))!),
              loss: typical.report!.losses[0]!,
              ...(mode === 'fused'
                ? {}
                : {
                    forwardMs: med((r) => r.forwardMs),
                    headMs: med((r) => r.headMs),
                    backwardMs: med((r) => r.backwardMs),
                    optimizerMs: med((r) => r.optimizerMs),
                  }),
              ...(typical.report!.packMs !== undefined
                ? {
                    packMs: med((r) => r.packMs),
                    unpackMs: med((r) => r.unpackMs),
                    packedMB: round(typical.report!.packedMB!),
                  }
                : {}),
            }
          : {
              batchSize: F,
              trained: false,
              outcome: timing
                .filter((t) => t.mode === mode)
                .map((t) => t.outcome)
                .join('; '),
            },
    };
  };
  const modes = Object.fromEntries(MODES.map((m) => [m, summary(m)])) as Record<Mode, ReturnType<typeof summary>>;
  return { modes, timedAt };
}
