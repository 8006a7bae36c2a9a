// soup train's optimizer step at G with micro-batch m: a = G / m forward/backward passes and ONE
// optimizer update (onnx-train's accumulate path), not a whole step (forward, backward and update)
// a times. The tuner times the accumulate path's micro-step at each m (onnx-train's microStep: a
// forward/backward, its gradients summed, no update) and its update once per tuning (timeUpdate).
import { fastestHalf, type StepToTime, stepOptionsOf } from './step-timing';

/** The accumulate path's update, timed once (timeUpdate). */
export interface UpdateTiming {
  /** The one optimizer update of a global step (clipping + AdamW, its feeds and the state swap), in ms. */
  updateMs: number;
  /** The micro-batch of the accumulated steps it was timed in (the update does not depend on it). */
  microBatchSize: number;
}

/** One optimizer step: `a` forward/backward passes of `microMs` each, and the update once. */
export const globalStepMs = (o: { microMs: number; updateMs: number; a: number }): number =>
  o.a * o.microMs + o.updateMs;

/**
 * The optimizer step at G from a timing at m: at a = 1 the whole step timed (soup train runs it as
 * one step); else `stepMs` is a micro-step, run a times, and the update once (globalStepMs).
 * Without `u` (not timed): a steps of `stepMs`.
 */
export function globalStepAt(G: number, m: number, stepMs: number, u: UpdateTiming | null): number {
  const a = G / m;
  if (a === 1 || u === null) return a * stepMs;
  return globalStepMs({ microMs: stepMs, updateMs: u.updateMs, a });
}

/** The timing at m whose optimizer step at G takes `globalMs` (globalStepAt's inverse). */
export function stepAtGlobal(G: number, m: number, globalMs: number, u: UpdateTiming | null): number {
  const a = G / m;
  if (a === 1 || u === null) return globalMs / a;
  return (globalMs - u.updateMs) / a;
}

/** Samples/s at G of a timing of `stepMs` at m: G over its optimizer step (globalStepAt). */
export const samplesPerSecondOf = (G: number, m: number, stepMs: number, u: UpdateTiming | null): number =>
  (G / globalStepAt(G, m, stepMs, u)) * 1000;

/**
 * A timing at m as a tune row shows it: its optimizer step's time per micro-batch (globalStepAt / a:
 * the micro-step and a share of the update), so that G / (a × step) is its samples/s; the noise is the micro-step's.
 */
export function perMicroBatch(
  G: number,
  m: number,
  t: { stepMs: number; noiseMs: number },
  u: UpdateTiming | null,
): { stepMs: number; noiseMs: number } {
  return { stepMs: globalStepAt(G, m, t.stepMs, u) / (G / m), noiseMs: t.noiseMs };
}

/**
 * The accumulate path's update at `o.batchSize` m (best the smallest: the update does not depend
 * on m, and the forward/backward around it costs least there): one session that never opens the
 * whole step's graph, two warm-up steps (the small template's first updates ran 37–43 ms where
 * the later ones settled at 22–36), then `rounds` accumulated steps of two micro-batches;
 * onnx-train reports each one's update apart, and the fastest half of those is the update.
 */
export async function timeUpdate(
  o: StepToTime & {
    /** @default 6 (the fastest half of six, as a first timing's steps) */
    rounds?: number;
  },
): Promise<UpdateTiming> {
  const { createTrainStep, makeSyntheticBatch } = await import('@soup/onnx-train');
  const m = o.batchSize;
  const step = await createTrainStep({ ...stepOptionsOf(o), deferSession: true });
  try {
    const two = makeSyntheticBatch({ spec: o.spec, batchSize: 2 * m, seed: 2 });
    // onnx-train times the update apart whenever it accumulates
    const update = async (): Promise<number> => (await step.run(two, { microBatchSize: m })).updateMs!;
    for (let i = 0; i < 2; i++) await update(); // the first also opens the accumulate path's sessions
    const times: number[] = [];
    for (let i = 0; i < (o.rounds ?? 6); i++) times.push(await update());
    return { updateMs: fastestHalf(times).stepMs, microBatchSize: m };
  } finally {
    await step.release();
  }
}
