import { deviceIdentity, type ChildProbeFn } from '@soup/cuda-probe';
import { readFileSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import {
  configStepProbe,
  noFitAdvice,
  probeRecord,
  onnxModelProbe,
  redactCommand,
  resolveBatch,
  stepGrowth,
  type StepGrowth,
  withProbeSteps,
  resolveTier,
  trainerChange,
  trainerKeyOf,
  trainerProbe,
  trainerTrialProbe,
  trainerTuneOptions,
  type BatchResolution,
} from '@soup/plan';
import { cappedFromLine, planIo } from '../_batch-lines';
import { execMicro, type ExecMicro } from '../_run-micro';
import { tuneExec } from '../_tune-exec';
import { deviceArg } from '../_parse';
import type { CommandContext } from '../_context';
import { checkTries } from '@soup/tune';
import { loadConfig, type SoupConfig } from '@soup/config';
import { UsageError } from '../errors';
import { formatBytes } from '../format-bytes';
import type { ProbeOptions } from './probe.options';

/** `soup probe`: the largest batch size that fits, for a soup.yaml model, any ONNX model or any trainer command. */
export async function run(opts: ProbeOptions, ctx: CommandContext): Promise<void> {
  // Over 150 lines: three probe sources (config, model, exec) feed one output, which reads best beside them.
  const sources = (['config', 'model', 'exec'] as const).filter((k) => opts[k] !== undefined);
  if (sources.length > 1)
    throw new UsageError(
      `pass one of -c/--config, --model, --exec (got ${sources.map((s) => `--${s}`).join(' and ')})`,
    );
  const mode = sources[0] ?? 'config';
  if ((opts.try !== undefined || opts.timeSteps !== undefined) && mode !== 'exec')
    throw new UsageError(
      `${opts.try !== undefined ? '--try' : '--time-steps'} applies to soup probe --exec (the trainer's own ` +
        `levers as {NAME} placeholders)`,
    );
  let config: SoupConfig | null = null;
  let configFile = '';
  if (mode === 'config') {
    const loaded = loadConfig({ path: opts.config ?? 'soup.yaml', cwd: ctx.cwd });
    for (const w of loaded.warnings)
      ctx.warn(`${loaded.displayPath}${w.line ? `:${w.line}` : ''}: ${w.path}: ${w.message}`);
    config = structuredClone(loaded.config);
    configFile = loaded.displayPath;
  }
  const device = opts.device ?? config?.device ?? deviceArg('cpu');
  const { kind, id: deviceId } = device;
  if (config) config.device = device;
  const identity = await deviceIdentity({ device: kind, deviceId, env: ctx.env });
  const budgetBytes = opts.budget ?? config?.training.memoryBudgetBytes ?? undefined;
  const timeoutMs = opts.timeout * 1000;
  const maxLength = opts.maxLength ?? config?.data.maxLength ?? 512;
  const micro = execMicro(opts, mode);
  const steps = { pattern: opts.stepsPattern, file: opts.stepsFile };
  const checked = checkTries({
    steps,
    tries: opts.try,
    timeSteps: opts.timeSteps,
    globalBatchSize: micro?.globalBatchSize,
    command: opts.exec ?? '',
  });
  if (checked.errors[0] !== undefined) throw new UsageError(checked.errors[0]);
  const start = opts.start ?? (micro ? micro.perRank : (config?.training.staticBatchSize ?? 8));
  const ceiling = opts.ceiling ?? (micro ? micro.perRank : start * 4);
  if (ceiling < start)
    throw new UsageError(`--ceiling ${ceiling} is below the start ${start}; pass --ceiling >= --start`);
  const common = {
    device: kind,
    deviceId,
    timeoutMs,
    signal: ctx.signal,
    env: ctx.env,
    cwd: ctx.cwd,
    ...(budgetBytes !== undefined ? { budgetBytes } : {}),
  };
  // An --exec command's trials: judged as `soup run --probe` judges them, under the same cache key.
  const trainer = {
    steps,
    ...planIo(ctx),
    identity,
    deviceId,
    budgetBytes: budgetBytes ?? null,
    timeoutMs,
    timeoutName: '--timeout',
    maxLength,
    quantization: config?.training.quantization ?? 'none',
    loraR: config?.training.loraR ?? 0,
  };
  /** The trainer probe of an --exec trial command (placeholders filled but {batch_size}). */
  const execProbe = (command: string) => {
    if (!command.includes('{batch_size}'))
      throw new UsageError('--exec needs {batch_size} in the command, e.g. --exec "python train.py --bs {batch_size}"');
    return trainerProbe(command, { ...trainer, base: opts.base });
  };
  /** --try: the fastest configuration that fits (see @soup/tune's tuneExec). */
  const tune = async (typed: string, micro: ExecMicro): Promise<void> => {
    const base = opts.base;
    await tuneExec({
      ctx,
      refresh: opts.refresh === true,
      noCache: opts.cache === false,
      ...trainerTuneOptions({
        ...trainer,
        command: typed,
        tries: checked.tries,
        micro,
        timeSteps: opts.timeSteps ?? 8,
        baseOf: base !== undefined ? () => base : undefined,
        assertTrial: execProbe,
        start: opts.start === undefined ? undefined : start,
        refresh: opts.refresh === true,
        noCache: opts.cache === false,
        cacheExceptionsOnly: opts.cacheExceptionsOnly === true,
        predict: opts.predict !== false,
      }),
    });
  };
  let probe: ChildProbeFn;
  let base: string;
  let what: string;
  let tier: string | null = null;
  let offloadTarget: 'cpu' | 'disk' | null = null;
  let granularity: string | null = null;
  let files: Record<string, string> | undefined;
  let keyUnknown: string | null = null;
  let execCommand: string | null = null;
  let execTrial: string | null = null;
  if (mode === 'config') {
    const c = config!;
    const t = resolveTier(c, identity.device === 'cuda' ? identity.gpuMemoryGb : null);
    if (t.granularity === 'budget')
      throw new UsageError(
        'soup probe measures fixed tiers; for gradient_checkpointing: budget run `soup plan`, which chooses the ' +
          'recompute set from measured steps',
      );
    const step = configStepProbe(c, t, { ...common, file: configFile });
    ({ probe, base } = step);
    offloadTarget = step.offload?.target ?? null;
    tier = t.description;
    granularity = t.granularity;
    what =
      `${c.base} (${c.model.nLayers} layer${c.model.nLayers === 1 ? '' : 's'}, d_model ${c.model.dModel}` +
      `, max_length ${c.data.maxLength}), checkpointing ${t.description}` +
      `${step.offload ? `, offload ${step.offload.target} (segmented step)` : ''}`;
  } else if (mode === 'model') {
    const model = resolve(ctx.cwd, opts.model ?? '');
    let bytes: Buffer;
    try {
      bytes = readFileSync(model);
    } catch (err) {
      throw new UsageError(
        `--model ${opts.model}: cannot read it (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
        { cause: err },
      );
    }
    const { vocabSize } = opts;
    ({ probe, base } = onnxModelProbe({ ...common, model, bytes, maxLength, vocabSize, base: opts.base }));
    what = `${basename(model)} (max_length ${maxLength})`;
  } else {
    const typed = opts.exec ?? '';
    if (opts.try !== undefined) {
      // checkTries refused --try without --global-batch-size, so there is a micro-batch to tune.
      await tune(typed, micro!);
      return;
    }
    execTrial = micro ? micro.command(typed) : typed;
    ({ probe, files, base, keyUnknown } = execProbe(execTrial));
    what = `\`${redactCommand(typed, 'mask')}\``;
    if (opts.base === undefined) execCommand = execTrial;
  }
  ctx.say(
    `probing ${what} on ${identity.gpuName} (${identity.gpuMemoryGb} GiB)` +
      `${budgetBytes !== undefined ? `, budget ${formatBytes(budgetBytes)}` : ''}: batch ${start} up to ${ceiling}`,
  );
  const keyFields = trainerKeyOf(base, trainer);
  if (execCommand !== null && opts.cache !== false && opts.refresh !== true) {
    const where = { env: ctx.env, cwd: ctx.cwd };
    const change = await trainerChange({ ...where, command: execCommand, files: files ?? {}, key: keyFields });
    if (change) ctx.say(change.line);
  }
  const r: BatchResolution = await resolveBatch({
    ...planIo(ctx),
    probe,
    budgetBytes: budgetBytes ?? null,
    refresh: opts.refresh === true,
    saveExceptionsOnly: opts.cacheExceptionsOnly === true,
    predict: opts.predict !== false,
    advice: noFitAdvice({
      mode,
      device: identity.device === 'cuda' ? 'cuda' : 'cpu',
      granularity,
      offloadTarget,
      budgetBytes: budgetBytes ?? null,
      budgetFrom: opts.budget !== undefined ? 'flag' : budgetBytes !== undefined ? 'config' : null,
      maxLength,
    }),
    key: keyFields,
    ...(files !== undefined ? { files } : {}),
    keyUnknown,
    reportsNotSaved: true,
    ...(micro ? { globalBatchSize: micro.globalBatchSize, worldSize: micro.worldSize, headroom: micro.headroom } : {}),
    start,
    ceiling,
    noCache: opts.cache === false,
  });
  if (micro) micro.warnIfOne(r.batchSize, ctx);
  // A command that takes {probe_steps} was probed over PROBE_STEPS steps: one step at the answer gives the growth.
  const growth =
    execTrial?.includes('{probe_steps}') && r.source === 'probe'
      ? await stepGrowth({
          oneStep: trainerTrialProbe(withProbeSteps(execTrial, 1), trainer),
          batchSize: r.batchSize,
          peakBytes: r.chosen?.peak_bytes ?? null,
        })
      : null;
  if (growth) ctx.say(growthLine(growth));
  ctx.emit(probeRecord(r, { device: identity, micro, gradCkpt: tier, offload: offloadTarget, growth }));
  if (r.source === 'cache') {
    const p = r.provenance;
    const how =
      p === null
        ? 'no provenance: written by the Python tool or an older soup'
        : `${p.bound}, judged by ${p.measurement}, budget ` +
          `${p.budgetBytes === null ? 'the device' : formatBytes(p.budgetBytes)}, ceiling ${p.ceiling}`;
    ctx.say(
      (micro
        ? `micro-batch ${ctx.style.bold(micro.shape(r.batchSize))}`
        : `batch size ${ctx.style.bold(String(r.batchSize))}`) +
        ` (from the cache, key ${r.cacheKey}; ${how}` +
        `${cappedFromLine(r)}; --refresh to probe again)`,
    );
  } else {
    const chosen = r.chosen?.measurement ? `, judged by ${r.chosen.measurement}` : '';
    const exceptionsOnly = r.chosen?.measurement === 'exceptions-only' && opts.cache !== false && !r.saved;
    const cached =
      opts.cache === false
        ? 'not cached'
        : r.saved
          ? `cached as ${r.cacheKey}${r.provenance && r.provenance.bound !== 'exact' ? ` (${r.provenance.bound})` : ''}`
          : exceptionsOnly
            ? 'not cached: no trial measured a peak, so only a failure could have refused this size; pass ' +
              '--budget to measure, or --cache-exceptions-only to cache it anyway'
            : `not cached: ${r.notSavedReason ?? 'unknown'}`;
    ctx.say(
      (micro
        ? `micro-batch ${ctx.style.bold(micro.shape(r.batchSize))}`
        : `batch size ${ctx.style.bold(String(r.batchSize))}`) +
        ` fits (${r.trials.length} trial${r.trials.length === 1 ? '' : 's'}${chosen}, ${cached}` +
        `${r.flatPeak ? '; its peak did not grow with the size: see the warning' : ''})`,
    );
  }
}

/** The probe's steps and what the steps after the first added at the answer. */
const growthLine = (g: StepGrowth): string =>
  g.growthBytes === null
    ? `memory growth over the trial's ${g.steps} steps: unknown (${g.unknown})`
    : `memory over the trial's ${g.steps} steps: peak ${formatBytes(g.peakBytes!)}, ` +
      `${formatBytes(g.oneStepPeakBytes!)} after one step ` +
      `(${g.growthBytes >= 0 ? '+' : '−'}${formatBytes(Math.abs(g.growthBytes))} in steps 2–${g.steps})`;
