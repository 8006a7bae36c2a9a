// What tuneExec's two injected measurements answer: a fit (the candidate's micro-batch and its search's 1-step
// trials) and a timing run. Each adapter (command-adapter) answers in these shapes.

/** What the fit search answered for one candidate. */
export type FitAnswer =
  | {
      batchSize: number;
      peakBytes: number | null;
      source: string;
      oneStepMs: number | null;
      oneStepSpanMs?: number | null;
      oneStepOutputChars?: number | null;
      /** The search's other 1-step trials that fitted, by m: the walk's 1-step point at a smaller m (walkDown). */
      oneStepAt?: ReadonlyMap<number, OneStepTrial>;
    }
  | { batchSize: null; why: string };

/** A fit trial: one run of the command with {probe_steps} = 1 at some m, measured as `time` measures a run. */
export interface OneStepTrial {
  ms: number;
  spanMs: number | null;
  outputChars: number | null;
  peakBytes: number | null;
}

/** One timing run's answer (tuneExec's `time`). */
export type TimeAnswer =
  | { ms: number; outputSpanMs?: number; outputChars?: number | null; stepsSeen?: number | null; peakBytes?: number }
  | { error: string; overMemory?: boolean };
