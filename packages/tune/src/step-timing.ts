// Timing one training step configuration in this process, on the run's device: a session opened
// and warmed up, then timed steps (the mean of the fastest half and its standard error), alone
// (timeTrainStep) or two side by side, one step of each a round (timeAlternately, timeSideBySide).
// soup train's tuner (tune-train) and soup's exhaustive grid (the CLI's bench) time steps with these.

/**
 * The geometry of the @soup/onnx-train GPT whose step is timed (its `GptSpec`, restated so that this
 * package's types need no onnx-train: it is an optional peer, loaded only when a step is timed).
 */
export interface StepGptSpec {
  vocabSize: number;
  seqLen: number;
  dModel: number;
  nHeads: number;
  nLayers: number;
  dFF: number;
  tieEmbeddings: boolean;
}

/** An activation offload for the step: where saved activations go (`saveDir`: the scratch directory of `disk`). */
export interface StepOffload {
  target: 'cpu' | 'disk';
  saveDir: string | null;
}

/** Samples/s at G of a step of `stepMs` ms at micro-batch m: G / (a × step), a = G / m. */
export const samplesPerSecondAt = (G: number, m: number, stepMs: number): number => (G / ((G / m) * stepMs)) * 1000;

/** When a timing may stop: its step time at which it would only tie the best so far, and the margin over it. */
export interface WinLimit {
  cannotWinAboveMs: number;
  margin: number;
}

/**
 * The fastest of its steps, three or more, over what it needs to win, by the margin: it cannot.
 * (Not fewer than three: the first steps after the warm-up can be 20–40 % slow while the allocator
 * still grows. Each further step can only lower the fastest, so a later check is no looser.)
 */
const cannotWin = (times: readonly number[], limit: WinLimit | undefined): boolean =>
  limit !== undefined && times.length >= 3 && Math.min(...times) > limit.cannotWinAboveMs * (1 + limit.margin);

/**
 * Step time (ms) of `steps` steps after a warm-up: the mean of the fastest half, and its noise (the
 * standard error of that mean). On a shared machine a neighbour's work only ever adds time, and the
 * first steps after the warm-up are still growing the allocator (at m = 16 on the small template:
 * 488, 426, then 348–363 ms), so the fastest half is the step's own cost and repeats within 2–3 %
 * where the median of the same runs moved 10 %. With `cannotWinAboveMs` (the step time at which this
 * candidate would only tie the best so far), timing stops after three steps whose fastest is more
 * than `margin` above it (`stoppedEarly`). In 25 timings on the small template (5 × off/selective
 * at 16 and 8, off at 4) the fastest of the first three steps was 0.97–1.06× the settled time (the
 * mean of the fastest half of 6), so a stop at 5 % leaves a candidate at most about 1 % faster
 * than the best; 10 % leaves none.
 */
export async function timeTrainStep(
  o: StepToTime & {
    steps: number;
    cannotWinAboveMs?: number;
    /** @default 0.1 */
    margin?: number;
    /**
     * Hand back the warm session instead of releasing it (`open`; the caller releases it). Not when
     * timing stopped early: that session is released here.
     */
    keepOpen?: boolean;
  },
): Promise<{ stepMs: number; noiseMs: number; times: number[]; stoppedEarly: boolean; open: OpenStep | null }> {
  const opened = await openWarmStep(o);
  let kept = false;
  try {
    const times: number[] = [];
    let stoppedEarly = false;
    for (let i = 0; i < o.steps; i++) {
      times.push((await opened.step.run(opened.batch)).totalMs);
      if (
        o.cannotWinAboveMs !== undefined &&
        cannotWin(times, { cannotWinAboveMs: o.cannotWinAboveMs, margin: o.margin ?? 0.1 })
      ) {
        stoppedEarly = true;
        break;
      }
    }
    kept = o.keepOpen === true && !stoppedEarly;
    return { ...fastestHalf(times), times, stoppedEarly, open: kept ? opened : null };
  } finally {
    if (!kept) await opened.step.release();
  }
}

/**
 * What one timing session runs: a template, its recompute set and offload, at one micro-batch, on
 * the device the run trains on (`executionProvider`, `deviceId`: soup.yaml's `device`). Required,
 * not defaulted: a timing on the CPU says nothing about a step on the GPU.
 */
export interface StepToTime {
  spec: StepGptSpec;
  recompute: string[];
  batchSize: number;
  threads: number;
  offload: StepOffload | null;
  cwd: string;
  executionProvider: 'cpu' | 'cuda';
  deviceId: number;
  /**
   * Time one micro-batch of an accumulated step (onnx-train's `microStep`: a forward/backward, its
   * gradients summed, no update), on a session that never opens the whole step's graph: the step
   * soup train runs a times at a = G / m > 1. Absent: a whole step (forward, backward, update).
   */
  microStep?: boolean;
}

/** A synthetic batch as the timings hold it (onnx-train's; only its size is read here). */
export interface StepBatch {
  batchSize: number;
}

/** A training step session as the timings use it (onnx-train's `createTrainStep`). */
export interface StepSession {
  /** Where it runs: a timing on one device says nothing about a step on another. */
  readonly executionProvider: 'cpu' | 'cuda';
  run(batch: StepBatch): Promise<{ totalMs: number }>;
  release(): Promise<void>;
}

/** A warm training step session and its synthetic batch (openWarmStep); whoever opened it releases it. */
export interface OpenStep {
  step: StepSession;
  batch: StepBatch;
}

/**
 * A training step session for `o`, its synthetic batch, and one warm-up step run (the runtime's first-run allocations).
 */
export async function openWarmStep(o: StepToTime): Promise<OpenStep> {
  // Loaded here, not at import: @soup/onnx-train (and onnxruntime-node) is an optional peer, needed
  // only by a caller that times soup's own step.
  const { createTrainStep, makeSyntheticBatch } = await import('@soup/onnx-train');
  const created = await createTrainStep({ ...stepOptionsOf(o), ...(o.microStep ? { deferSession: true } : {}) });
  const step: StepSession = o.microStep
    ? {
        executionProvider: created.executionProvider,
        run: (b) => created.microStep(b as Parameters<typeof created.microStep>[0]),
        release: () => created.release(),
      }
    : created;
  try {
    const batch = makeSyntheticBatch({ spec: o.spec, batchSize: o.batchSize, seed: 1 });
    await step.run(batch);
    return { step, batch };
  } catch (err) {
    await step.release();
    throw err;
  }
}

/** onnx-train's options for the step `o` times (its own seed and synthetic batch: the same in every timing). */
export function stepOptionsOf(o: StepToTime) {
  return {
    spec: o.spec,
    seed: 0,
    recompute: o.recompute,
    executionProvider: o.executionProvider,
    deviceId: o.deviceId,
    ...(o.threads > 0 ? { intraOpNumThreads: o.threads } : {}),
    ...(o.offload
      ? {
          offload: {
            target: o.offload.target,
            ...(o.offload.saveDir ? { saveDir: o.offload.saveDir } : {}),
            cwd: o.cwd,
          },
        }
      : {}),
  };
}

/** A step's time: the mean of its fastest half and that mean's standard error, in ms (fastestHalf). */
export interface StepTiming {
  stepMs: number;
  noiseMs: number;
}

/**
 * Two step sessions timed against each other: both open and warm (a side given as an OpenStep, a
 * session kept from its first timing, is used as it is: no new session, no warm-up, and it is not
 * released here), then `steps` rounds of one step each, in the order AB, BA, AB, … so that what the
 * machine does meanwhile (a neighbour, a frequency change) falls on both alike. Each side: the mean
 * of its fastest half and its standard error, as timeTrainStep. Both sessions are held at once (the
 * soup process, not a probe child).
 */
export async function timeAlternately(
  a: StepToTime | OpenStep,
  b: StepToTime | OpenStep,
  steps: number,
): Promise<[StepTiming, StepTiming]> {
  const opened: OpenStep[] = [];
  try {
    const sides: OpenStep[] = [];
    for (const p of [a, b]) {
      if ('step' in p) sides.push(p);
      else {
        const s = await openWarmStep(p);
        opened.push(s);
        sides.push(s);
      }
    }
    const { times } = await alternate(sides, steps);
    return [fastestHalf(times[0]!), fastestHalf(times[1]!)];
  } finally {
    for (const s of opened) await s.step.release();
  }
}

/** One side of timeSideBySide: its timing, its steps, whether it stopped early, and its session while open. */
export interface SideTiming extends StepTiming {
  times: number[];
  stoppedEarly: boolean;
  /** Its warm session, handed back open (the caller releases it); null when it stopped early (released here). */
  open: OpenStep | null;
  /** The limit it stopped against (null: it ran to the end). */
  stoppedBy: WinLimit | null;
}

/**
 * When side `j` of a side-by-side timing may stop, asked once it has three steps and again after
 * each further step (with every side's steps so far, and which have stopped): a fixed limit, or one
 * from the other sides' steps under the same load. Undefined: it may not stop now.
 */
export type LimitOf = (
  j: number,
  times: readonly (readonly number[])[],
  stopped: readonly boolean[],
) => WinLimit | undefined;

/**
 * First timings taken side by side: every session opened and warmed up, then `steps` rounds of one
 * step each (alternate), so each side has as many steps as timeTrainStep gives it alone and all
 * are compared under one load. A side whose `limitOf` says it cannot win stops (as timeTrainStep
 * after three steps) and the others go on; a stopped side's session is released at once, not held
 * while the others run. The sessions of sides that ran to the end are handed back open (the
 * caller releases them); on an error every session opened here is released.
 */
export async function timeSideBySide(
  sides: readonly StepToTime[],
  steps: number,
  limitOf: LimitOf = () => undefined,
): Promise<SideTiming[]> {
  const opened: OpenStep[] = [];
  const done = new Set<OpenStep>(); // released, or handed back open
  const release = async (s: OpenStep): Promise<void> => {
    done.add(s);
    await s.step.release();
  };
  try {
    for (const p of sides) opened.push(await openWarmStep(p));
    const { times, stoppedBy } = await alternate(opened, steps, limitOf, (j) => release(opened[j]!));
    const out = opened.map((s, j): SideTiming => {
      const by = stoppedBy[j] ?? null;
      return {
        ...fastestHalf(times[j]!),
        times: times[j]!,
        stoppedEarly: by !== null,
        open: by === null ? s : null,
        stoppedBy: by,
      };
    });
    for (const s of out) if (s.open) done.add(s.open);
    return out;
  } finally {
    for (const s of opened) if (!done.has(s)) await s.step.release();
  }
}

/**
 * `steps` rounds of one step on each warm session, in the order 0, 1, …, n−1, then n−1, …, 0, and
 * so on (for two: AB, BA, AB, …), so that what the machine does meanwhile falls on all alike: each
 * side's step times. A side takes no more steps once it cannot win (cannotWin against `limitOf`'s
 * limit, asked from its third step on: `stoppedBy` holds that limit, and `onStop` is called with
 * its index); the others go on. Sessions are not released here.
 */
async function alternate(
  sides: readonly OpenStep[],
  steps: number,
  limitOf: LimitOf = () => undefined,
  onStop?: (j: number) => Promise<void>,
): Promise<{ times: number[][]; stoppedBy: (WinLimit | undefined)[] }> {
  const times: number[][] = sides.map(() => []);
  const stoppedBy: (WinLimit | undefined)[] = sides.map(() => undefined);
  const stopped = (): boolean[] => stoppedBy.map((l) => l !== undefined);
  const order = sides.map((_, j) => j);
  for (let i = 0; i < steps; i++) {
    for (const j of i % 2 === 0 ? order : [...order].reverse()) {
      if (stoppedBy[j]) continue;
      times[j]!.push((await sides[j]!.step.run(sides[j]!.batch)).totalMs);
      if (times[j]!.length >= 3 && i < steps - 1) {
        const limit = limitOf(j, times, stopped());
        if (cannotWin(times[j]!, limit)) {
          stoppedBy[j] = limit;
          await onStop?.(j);
        }
      }
    }
  }
  return { times, stoppedBy };
}

/** Mean of the fastest half of `times` and its standard error (0 with one value). */
export function fastestHalf(times: readonly number[]): StepTiming {
  const fast = [...times].sort((a, b) => a - b).slice(0, Math.max(1, Math.ceil(times.length / 2)));
  const mean = fast.reduce((a, b) => a + b, 0) / fast.length;
  if (fast.length < 2) return { stepMs: mean, noiseMs: 0 };
  const sd = Math.sqrt(fast.reduce((a, t) => a + (t - mean) ** 2, 0) / (fast.length - 1));
  return { stepMs: mean, noiseMs: sd / Math.sqrt(fast.length) };
}
