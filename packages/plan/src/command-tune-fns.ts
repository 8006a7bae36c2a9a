// The fit and timing runs of `--try` for a trainer command (soup probe --exec and soup run): @soup/tune's
// command adapter, its search being soup's micro-batch resolution (the batch cache first, progress
// reported) with the flags' options.
import type { ChildProbeFn } from '@soup/cuda-probe';
import { commandFit, commandTime, type TuneExecOptions } from '@soup/tune';
import { resolveBatch, type BatchEvent, type PlanIo, type ResolveBatchOptions } from './resolve-batch';

/** `--try`'s fit (soup's micro-batch search) and time (one timing run) for a trainer command. */
export function commandTuneFns(
  o: PlanIo & {
    /** The fit searches' events (each a batch-size search). */
    onEvent?: (e: BatchEvent) => void;
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
      /** Why the key cannot name the trainer (its sources unknown): nothing cached. */
      keyUnknown?: string | null;
    };
    keyOf(base: string): ResolveBatchOptions['key'];
    budgetBytes: number | null;
    /** Where the fit search starts (--start); undefined: from below, the edge predicted from the peaks. */
    start: number | undefined;
    refresh: boolean;
    noCache: boolean;
    cacheExceptionsOnly: boolean;
    predict: boolean;
  },
): Pick<TuneExecOptions, 'fit' | 'time'> {
  const { micro } = o;
  return {
    time: commandTime((cmd) => o.execProbe(micro.command(cmd)).probe),
    fit: commandFit(async (cmd) => {
      const e = o.execProbe(micro.command(cmd));
      return resolveBatch({
        env: o.env,
        cwd: o.cwd,
        signal: o.signal,
        ...(o.onEvent ? { onEvent: o.onEvent } : {}),
        probe: e.probe,
        budgetBytes: o.budgetBytes,
        refresh: o.refresh,
        saveExceptionsOnly: o.cacheExceptionsOnly,
        predict: o.predict,
        key: o.keyOf(e.base),
        ...(e.files ? { files: e.files } : {}),
        keyUnknown: e.keyUnknown ?? null,
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
    }),
  };
}
