import { describeResolution, describeStepGrowth, microBatchOneWarning, probeSource } from '@soup/plan';
import { planIo } from '../_batch-lines';
import { tuneExec } from '../_tune-exec';
import type { CommandContext } from '../_context';
import type { ProbeOptions } from './probe.options';

/**
 * `soup probe`: the largest batch size that fits, for a soup.yaml model, any ONNX model or any trainer command. The
 * sources, their refusals and defaults are @soup/plan's probeSource; this maps the flags in and says the lines.
 */
export async function run(opts: ProbeOptions, ctx: CommandContext): Promise<void> {
  const source = await probeSource({
    ...planIo(ctx),
    onConfigWarning: (w) => ctx.warn(`${w.file}${w.line ? `:${w.line}` : ''}: ${w.path}: ${w.message}`),
    config: opts.config,
    model: opts.model,
    exec: opts.exec,
    device: opts.device,
    budgetBytes: opts.budget,
    maxLength: opts.maxLength,
    vocabSize: opts.vocabSize,
    base: opts.base,
    start: opts.start,
    ceiling: opts.ceiling,
    timeoutMs: opts.timeout * 1000,
    tries: opts.try,
    timeSteps: opts.timeSteps,
    steps: { pattern: opts.stepsPattern, file: opts.stepsFile },
    globalBatchSize: opts.globalBatchSize,
    worldSize: opts.worldSize,
    headroom: opts.headroom,
    refresh: opts.refresh === true,
    noCache: opts.cache === false,
    cacheExceptionsOnly: opts.cacheExceptionsOnly === true,
    predict: opts.predict !== false,
  });
  // --try: the fastest configuration that fits (see @soup/tune's tuneExec).
  if (source.kind === 'tune') {
    await tuneExec({ ctx, ...source.tune });
    return;
  }
  ctx.say(source.line);
  const change = await source.change();
  if (change) ctx.say(change.line);
  const r = await source.resolve();
  const { micro, identity } = source;
  const one = micro && microBatchOneWarning({ ...micro, batchSize: r.batchSize });
  if (one) ctx.warn(one);
  const growth = await source.growth(r);
  if (growth) ctx.say(describeStepGrowth(growth));
  ctx.emit(source.record(r, growth));
  ctx.say(describeResolution(r, { gpuName: identity.gpuName, micro, flagHints: true, style: ctx.style }));
}
