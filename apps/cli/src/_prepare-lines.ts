// A soup.yaml run made concrete for this device (@soup/plan's prepareRun), its events turned into lines:
// shared by `soup plan` and `soup train`.
import { formatMicroBatch } from '@soup/batch-probe';
import { resetHighWaterMark } from '@soup/cuda-probe';
import { prepareRun as prepare, type PrepareEvent, type PreparedRun, type PrepareRunOptions } from '@soup/plan';
import { batchLines, trialLine } from './_batch-lines';
import type { CommandContext } from './_context';
import { printTable, sayTuneEvent } from './_tune-exec';
import { formatBytes } from './format-bytes';

export type { PreparedRun } from '@soup/plan';

/** Resolves device, tier and batch size (@soup/plan), each step shown as the command's lines. */
export function prepareRun(
  opts: Omit<PrepareRunOptions, 'env' | 'cwd' | 'signal' | 'onEvent' | 'resetPeak'> & { ctx: CommandContext },
): Promise<PreparedRun> {
  const { ctx, ...rest } = opts;
  return prepare({ ...rest, ...prepareIo(ctx) });
}

/** prepareRun's environment, folder and stop from the command's context, its events drawn as lines. */
export function prepareIo(
  ctx: CommandContext,
): Pick<PrepareRunOptions, 'env' | 'cwd' | 'signal' | 'onEvent' | 'resetPeak'> {
  return {
    env: ctx.env,
    cwd: ctx.cwd,
    signal: ctx.signal,
    onEvent: prepareLines(ctx),
    // The tuner's timing sessions are released: its peak is measured apart from what follows (soup train's
    // session peak).
    resetPeak: () => resetHighWaterMark(),
  };
}

/** The lines of prepareRun's events. */
function prepareLines(ctx: CommandContext): (e: PrepareEvent) => void {
  const batch = batchLines(ctx);
  const tune = sayTuneEvent(ctx);
  return (e) => {
    switch (e.type) {
      case 'tune':
        return tune(e.event);
      case 'tuned':
        return printTable(ctx, e.entry);
      case 'probe-start':
        return ctx.say(
          `micro_batch_size: auto, the cache first, else one real training step per divisor of batch_size ` +
            `${e.globalBatchSize} from ${e.start} (checkpointing ${e.checkpointing}` +
            `${e.offloadTarget ? `, offload ${e.offloadTarget}, segmented` : ''}` +
            `${e.headroom > 0 ? `, peak ≤ ${Math.round((1 - e.headroom) * 100)} % of the budget` : ''})`,
        );
      case 'micro-batch':
        return microBatchLines(ctx, e);
      case 'budget-start':
        return ctx.say(
          `gradient_checkpointing: budget, measuring batch ${e.batchSize} against ${formatBytes(e.memoryBudgetBytes)}`,
        );
      case 'budget-measure':
        return ctx.say(`  ${e.what}: peak ${formatBytes(e.peakBytes)}`);
      case 'measured':
        return ctx.say(`measured one step:${trialLine(e.trial, ctx).replace(/^ +/, ' ')}`);
      default:
        return batch(e);
    }
  };
}

/** The micro-batch found (cached or probed), and a warning when only 1 fits a G with larger divisors. */
function microBatchLines(ctx: CommandContext, e: Extract<PrepareEvent, { type: 'micro-batch' }>): void {
  const { resolution: r, globalBatchSize } = e;
  const batchSize = r.batchSize;
  const shape = formatMicroBatch({ microBatchSize: batchSize, accumulation: globalBatchSize / batchSize });
  const capped =
    e.bound === 'capped'
      ? `; capped: ${batchSize} is the ceiling of the search (the global batch G, a = 1), a larger micro-batch ` +
        `is never tried`
      : '';
  ctx.say(
    r.source === 'cache'
      ? `micro-batch ${shape} (cached, key ${r.cacheKey}${capped})`
      : `micro-batch ${shape} (probed in ${r.trials.length} trial${r.trials.length === 1 ? '' : 's'}` +
          `${r.saved ? `, cached as ${r.cacheKey}` : ', not cached'}${capped})`,
  );
  if (batchSize === 1 && globalBatchSize > 1 && r.trials.some((t) => t.result === 'fit' && t.batch_size === 1)) {
    ctx.warn(
      `micro_batch_size 1: no larger divisor of batch_size ${globalBatchSize} fits, so each step accumulates ` +
        `${globalBatchSize} micro-batches of 1; a batch_size with more divisors (e.g. ` +
        `${globalBatchSize + (globalBatchSize % 2)}) may use the device better`,
    );
  }
}
