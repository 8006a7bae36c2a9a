// tuneExec's fit and time for any trainer command, over @soup/cuda-probe's command probe: a fit is
// the micro-batch search with {probe_steps} = 1; a timing run is one probe of the command with
// {probe_steps} = N, so its wall time is measured the same way as the fit trial (the 1-step point:
// the child's own spawn-to-exit time, as the probe reports it, without any set-up of the probe
// around it) and its memory is judged over every step.
import { formatBytes, NoBatchFitsError } from '@soup/batch-probe';
import type { ChildProbeFn } from '@soup/cuda-probe';
import type { FitAnswer, OneStepTrial } from './exec-answers';
import type { TuneExecOptions } from './tune-exec';

/** A micro-batch search's answer as the fit reads it: m, where it came from, and its trial at m when it ran one. */
export interface CommandSearch {
  batchSize: number;
  source: string;
  /** The fit trial at m (null: m came from a cache). */
  chosen: CommandTrial | null;
  /** Every trial of the search (absent: none is known). */
  trials?: readonly CommandTrial[];
}

/** One trial of the search, as the fit reads it. */
export interface CommandTrial {
  batch_size?: number;
  result?: string;
  /** A doubt about a fit (the trainer printed an out-of-memory error, …). */
  warning?: string;
  peak_bytes: number | null;
  run_ms?: number;
  run_output_span_ms?: number;
  run_output_chars?: number;
}

/**
 * tuneExec's `time`: the command's probe (`probeOf`: the probe of a command with every placeholder
 * but {batch_size} filled) at micro-batch m with {probe_steps} = `steps`: the child's own wall time
 * and its output's span and size, the trainer's own step count (`stepsSeen`), or why it did not fit.
 */
export function commandTime(probeOf: (command: string) => ChildProbeFn): TuneExecOptions['time'] {
  return async (cmd, steps, m) => {
    const r = await probeOf(cmd.replaceAll('{probe_steps}', String(steps)))(m);
    if (r.reason !== 'fit')
      return {
        // Each reason is the memory (a SIGKILL is judged the OOM killer's only on evidence): a smaller m may fit.
        overMemory: true,
        error: `${r.reason === 'over-budget' ? 'over the budget' : r.reason === 'killed' ? 'killed (SIGKILL)' : 'out of memory'} over ${steps} steps${
          r.peakBytes ? ` (peak ${formatBytes(r.peakBytes)})` : ''
        }`,
      };
    // The child's own wall time (spawn to exit), as the fit trial's run_ms, its output's span and size, the steps the
    // trainer counted (where the probe was told how it shows them), its peak.
    return {
      ms: r.ms,
      ...(r.outputSpanMs !== undefined ? { outputSpanMs: r.outputSpanMs } : {}),
      ...(r.outputChars !== undefined ? { outputChars: r.outputChars } : {}),
      ...(r.stepsSeen !== undefined ? { stepsSeen: r.stepsSeen } : {}),
      ...(r.peakBytes !== undefined ? { peakBytes: r.peakBytes } : {}),
    };
  };
}

/**
 * tuneExec's `fit`: `search` (the micro-batch search over the command with {probe_steps} = 1) read
 * as a FitAnswer; its trial at m is the 1-step point of the timing. NoBatchFitsError: none fits.
 */
export function commandFit(search: (command: string) => Promise<CommandSearch>): TuneExecOptions['fit'] {
  return async (cmd): Promise<FitAnswer> => {
    try {
      const r = await search(cmd.replaceAll('{probe_steps}', '1'));
      return {
        batchSize: r.batchSize,
        peakBytes: r.chosen?.peak_bytes ?? null,
        source: r.source,
        oneStepMs: r.chosen?.run_ms ?? null,
        oneStepSpanMs: r.chosen?.run_output_span_ms ?? null,
        oneStepOutputChars: r.chosen?.run_output_chars ?? null,
        oneStepAt: otherOneStepTrials(r),
      };
    } catch (err) {
      if (err instanceof NoBatchFitsError) return { batchSize: null, why: 'no micro-batch fits' };
      throw err;
    }
  };
}

/** The search's trials at other micro-batches that fitted with no doubt, timed, by m (the last at each m). */
function otherOneStepTrials(r: CommandSearch): Map<number, OneStepTrial> {
  const at = new Map<number, OneStepTrial>();
  for (const t of r.trials ?? [])
    if (t.result === 'fit' && !t.warning && t.run_ms !== undefined && t.batch_size !== undefined)
      if (t.batch_size !== r.batchSize)
        at.set(t.batch_size, {
          ms: t.run_ms,
          spanMs: t.run_output_span_ms ?? null,
          outputChars: t.run_output_chars ?? null,
          peakBytes: t.peak_bytes,
        });
  return at;
}
