// The newest step a trainer has reported: from its output lines (`step 12`, `global_step=12`,
// `Step 12/100`) and from the checkpoints that appear (`checkpoint-12`). It names where a memory
// peak or an out-of-memory failure happened; it is what the trainer said, nothing more.
const STEP = /\b(?:global[_ ]step|step)\b["']?\s*[=:]?\s*(\d+)/gi;

/** Tracks the newest step seen (see the file comment). */
export interface NewestStep {
  /** Feeds a chunk of the trainer's output (stdout or stderr). */
  output(chunk: string): void;
  /** A checkpoint of this step appeared. */
  checkpoint(step: number): void;
  /** The newest step seen, null before any. */
  readonly step: number | null;
}

export function trackNewestStep(): NewestStep {
  let step: number | null = null;
  let partial = '';
  return {
    output(chunk) {
      const lines = (partial + chunk).split('\n');
      partial = (lines.pop() ?? '').slice(-1000);
      for (const line of lines) {
        let last: number | null = null;
        for (const m of line.matchAll(STEP)) last = Number(m[1]);
        // A relaunched trainer reports from its resume step again: the last report wins.
        if (last !== null && Number.isSafeInteger(last)) step = last;
      }
    },
    checkpoint(s) {
      if (step === null || s > step) step = s;
    },
    get step() {
      return step;
    },
  };
}
