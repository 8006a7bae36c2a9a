// The fit and timing runs of `--try` for any trainer command (soup probe --exec and soup run): a
// fit is the micro-batch search with {probe_steps} = 1; a timing run is one probe of the command
// with {probe_steps} = N, so its wall time is measured the same way as the fit trial (the 1-step
// point: the child's own spawn-to-exit time, as the probe reports it, without any set-up of the
// probe around it) and its memory is judged over every step.
import { NoBatchFitsError } from '@soup/batch-probe';
import type { ChildProbeFn } from '@soup/cuda-probe';
import { resolveBatch, type ResolveBatchOptions } from './_batch';
import type { CommandContext } from './_context';
import type { FitAnswer, TuneExecOptions } from './_tune-exec';
import { formatBytes } from './format-bytes';

export function commandTuneFns(o: {
  ctx: CommandContext;
  micro: {
    globalBatchSize: number;
    worldSize: number;
    perRank: number;
    headroom: number;
    command(typed: string): string;
  };
  /** The command probe for a trial's command ({batch_size} still in), the files it names and its cache base. */
  execProbe(command: string): {
    probe: ChildProbeFn;
    files?: Record<string, string>;
    base: string;
  };
  keyOf(base: string): ResolveBatchOptions['key'];
  budgetBytes: number | null;
  /** Where the fit search starts (--start); undefined: from below, the edge predicted from the peaks. */
  start: number | undefined;
  refresh: boolean;
  noCache: boolean;
  cacheExceptionsOnly: boolean;
  predict: boolean;
}): Pick<TuneExecOptions, 'fit' | 'time'> {
  const { micro } = o;
  return {
    time: async (cmd, steps, m) => {
      const r = await o.execProbe(micro.command(cmd).replaceAll('{probe_steps}', String(steps))).probe(m);
      if (r.reason !== 'fit')
        return {
          error: `${r.reason === 'over-budget' ? 'over the budget' : r.reason === 'killed' ? 'killed (SIGKILL)' : 'out of memory'} over ${steps} steps${
            r.peakBytes ? ` (peak ${formatBytes(r.peakBytes)})` : ''
          }`,
        };
      // The child's own wall time (spawn to exit), as the fit trial's run_ms, and its output's span.
      return { ms: r.ms, ...(r.outputSpanMs !== undefined ? { outputSpanMs: r.outputSpanMs } : {}) };
    },
    fit: async (cmd): Promise<FitAnswer> => {
      const e = o.execProbe(micro.command(cmd).replaceAll('{probe_steps}', '1'));
      try {
        const r = await resolveBatch({
          ctx: o.ctx,
          probe: e.probe,
          budgetBytes: o.budgetBytes,
          refresh: o.refresh,
          saveExceptionsOnly: o.cacheExceptionsOnly,
          predict: o.predict,
          key: o.keyOf(e.base),
          ...(e.files ? { files: e.files } : {}),
          reportsNotSaved: true,
          globalBatchSize: micro.globalBatchSize,
          worldSize: micro.worldSize,
          headroom: micro.headroom,
          start: Math.min(o.start ?? 1, micro.perRank),
          // From below unless --start says where: small trials first, and the edge predicted from
          // their peaks (a divisor the line puts over 10 % past the budget is not tried).
          ...(o.start === undefined ? { fromBelow: { margin: 0.1 } } : {}),
          ceiling: micro.perRank,
          noCache: o.noCache,
        });
        return {
          batchSize: r.batchSize,
          peakBytes: r.chosen?.peak_bytes ?? null,
          source: r.source,
          oneStepMs: r.chosen?.run_ms ?? null,
          oneStepSpanMs: r.chosen?.run_output_span_ms ?? null,
        };
      } catch (err) {
        if (err instanceof NoBatchFitsError) return { batchSize: null, why: 'no micro-batch fits' };
        throw err;
      }
    },
  };
}
