// A soup.yaml run made concrete for this device (@soup/plan's prepareRun), its events turned into lines:
// shared by `soup plan` and `soup train`.
import { resetHighWaterMark } from '@soup/cuda-probe';
import { prepareRun as prepare, type PrepareEvent, type PreparedRun, type PrepareRunOptions } from '@soup/plan';
import { batchLines, trialLine } from './_batch-lines';
import type { CommandContext } from './_context';
import { printTable, sayTuneEvent } from './_tune-exec';

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

/** The lines of prepareRun's events: each carries its sentence; the trials and the tuner's table are drawn here. */
function prepareLines(ctx: CommandContext): (e: PrepareEvent) => void {
  const batch = batchLines(ctx);
  const tune = sayTuneEvent(ctx);
  return (e) => {
    switch (e.type) {
      case 'tune':
        return tune(e.event);
      case 'tuned':
        return printTable(ctx, e.entry);
      case 'measured':
        return ctx.say(`measured one step:${trialLine(e.trial, ctx).replace(/^ +/, ' ')}`);
      case 'micro-batch':
        ctx.say(e.line);
        return e.warning === null ? undefined : ctx.warn(e.warning);
      case 'probe-start':
      case 'budget-start':
      case 'budget-measure':
        return ctx.say(e.line);
      default:
        return batch(e);
    }
  };
}
