// soup probe's three sources, as rules any caller can follow: a soup.yaml's model (its tier and offload as soup train
// would train them), any ONNX model, or a trainer command (its {batch_size} filled per trial, or with --try its levers
// tuned). Which source, what is refused, the defaults (device, budget, max length, start and ceiling) and each
// source's probe, cache base and description are decided here; the caller maps its flags in and draws the lines.
import { type CacheKeyFields, formatBytes } from '@soup/batch-probe';
import { type ConfigIssue, type DeviceSpec, loadConfig, type SoupConfig } from '@soup/config';
import { type ChildProbeFn, type DeviceIdentity, deviceIdentity } from '@soup/cuda-probe';
import { checkTries } from '@soup/tune';
import { readFileSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { resolveTier } from './config-plan';
import { PlanUsageError } from './errors';
import { type GlobalBatch, probeGlobalBatch } from './global-batch';
import { noFitAdvice } from './no-fit-advice';
import { probeRecord } from './probe-record';
import { type StepGrowth, stepGrowth, withProbeSteps } from './probe-steps';
import { type BatchEvent, type BatchResolution, type PlanIo, resolveBatch } from './resolve-batch';
import { configStepProbe, onnxModelProbe } from './step-probes';
import { trainerChange, type TrainerChange } from './trainer-change';
import { redactCommand } from './trainer-files';
import {
  DEFAULT_MAX_LENGTH,
  type TrainerProbeOptions,
  trainerKeyOf,
  trainerProbe,
  trainerTrialProbe,
  trialCommand,
} from './trainer-probe';
import { type TrainerTune, trainerTuneOptions } from './trainer-tune';

/** Options of {@link probeSource}: soup probe's flags, as given (undefined: not given). */
export interface ProbeSourceOptions extends PlanIo {
  /** The searches' events (the caller draws them). */
  onEvent?: (e: BatchEvent) => void;
  /** A warning of the soup.yaml read (`file`: its path as shown). */
  onConfigWarning?: (w: ConfigIssue & { file: string }) => void;
  /** The soup.yaml to probe (-c); the source when neither `model` nor `exec` is given. @default 'soup.yaml' */
  config?: string | undefined;
  /** An ONNX model file to probe (--model). */
  model?: string | undefined;
  /** A trainer command with {batch_size} (--exec). */
  exec?: string | undefined;
  /** @default the config's device, else the CPU */
  device?: DeviceSpec | undefined;
  /** @default training.memory_budget of the config, else the device's own */
  budgetBytes?: number | undefined;
  /** @default data.max_length of the config, else DEFAULT_MAX_LENGTH (512) */
  maxLength?: number | undefined;
  /** --model's vocabulary size (keeps the pad id in range). */
  vocabSize: number;
  /** The cache base of --model / --exec. @default derived from the file or the command */
  base?: string | undefined;
  /** @default the micro-batch's G / N, else training.static_batch_size, else 8 */
  start?: number | undefined;
  /** @default G / N with a global batch, else 4 × start */
  ceiling?: number | undefined;
  /** A trial running longer than this is killed (named `--timeout`). */
  timeoutMs: number;
  /** --try `NAME=v1,v2` values (with --exec and a global batch). */
  tries?: string[] | undefined;
  /** --time-steps (with --try). */
  timeSteps?: number | undefined;
  /** --steps-pattern / --steps-file (with --try). */
  steps: { pattern?: string | undefined; file?: string | undefined };
  globalBatchSize?: number | undefined;
  worldSize?: number | undefined;
  headroom?: number | undefined;
  refresh: boolean;
  noCache: boolean;
  cacheExceptionsOnly: boolean;
  predict: boolean;
}

/** --exec with --try: the tuner's options (the caller runs @soup/tune's tuneExec and prints its table). */
export interface ProbeTuning {
  kind: 'tune';
  tune: TrainerTune & { refresh: boolean; noCache: boolean };
}

/** A batch search of one source, ready to run. */
export interface ProbeSearch {
  kind: 'search';
  mode: 'config' | 'model' | 'exec';
  identity: DeviceIdentity;
  /** With --global-batch-size: the answer is a micro-batch. */
  micro: GlobalBatch | null;
  /** `probing <what> on <device> (<GiB>), budget …: batch <start> up to <ceiling>`. */
  line: string;
  /** An --exec command's earlier answer for other file contents (looked up without --base, --no-cache, --refresh). */
  change(): Promise<TrainerChange | null>;
  /** The search: the cache first, else one trial per candidate. */
  resolve(): Promise<BatchResolution>;
  /** A command that takes {probe_steps}, probed now: what the steps after the first added at the answer. */
  growth(r: BatchResolution): Promise<StepGrowth | null>;
  /** The record `soup probe --json` prints. */
  record(r: BatchResolution, growth: StepGrowth | null): Record<string, unknown>;
}

/** Which source the options name, its refusals and defaults, and its search (or, with --try, its tuning). */
export async function probeSource(o: ProbeSourceOptions): Promise<ProbeTuning | ProbeSearch> {
  // Over 150 lines: three sources share their defaults, refusals and search, which read best beside each other.
  const sources = (['config', 'model', 'exec'] as const).filter((k) => o[k] !== undefined);
  if (sources.length > 1)
    throw new PlanUsageError(
      `pass one of -c/--config, --model, --exec (got ${sources.map((s) => `--${s}`).join(' and ')})`,
    );
  const mode = sources[0] ?? 'config';
  if ((o.tries !== undefined || o.timeSteps !== undefined) && mode !== 'exec')
    throw new PlanUsageError(
      `${o.tries !== undefined ? '--try' : '--time-steps'} applies to soup probe --exec (the trainer's own ` +
        `levers as {NAME} placeholders)`,
    );
  let config: SoupConfig | null = null;
  let configFile = '';
  if (mode === 'config') {
    const loaded = loadConfig({ path: o.config ?? 'soup.yaml', cwd: o.cwd });
    for (const w of loaded.warnings) o.onConfigWarning?.({ ...w, file: loaded.displayPath });
    config = structuredClone(loaded.config);
    configFile = loaded.displayPath;
  }
  const device: DeviceSpec = o.device ?? config?.device ?? { kind: 'cpu', id: 0, spec: 'cpu' };
  if (config) config.device = device;
  const identity = await deviceIdentity({ device: device.kind, deviceId: device.id, env: o.env });
  const budgetBytes = o.budgetBytes ?? config?.training.memoryBudgetBytes ?? null;
  const maxLength = o.maxLength ?? config?.data.maxLength ?? DEFAULT_MAX_LENGTH;
  const { batch: micro, errors } = probeGlobalBatch({ ...o, mode });
  if (errors[0] !== undefined) throw new PlanUsageError(errors[0]);
  const checked = checkTries({
    steps: o.steps,
    tries: o.tries,
    timeSteps: o.timeSteps,
    globalBatchSize: micro?.globalBatchSize,
    command: o.exec ?? '',
  });
  if (checked.errors[0] !== undefined) throw new PlanUsageError(checked.errors[0]);
  const start = o.start ?? (micro ? micro.perRank : (config?.training.staticBatchSize ?? 8));
  const ceiling = o.ceiling ?? (micro ? micro.perRank : start * 4);
  if (ceiling < start)
    throw new PlanUsageError(`--ceiling ${ceiling} is below the start ${start}; pass --ceiling >= --start`);
  const io = { env: o.env, cwd: o.cwd, signal: o.signal, ...(o.onEvent ? { onEvent: o.onEvent } : {}) };
  const common = {
    device: device.kind,
    deviceId: device.id,
    timeoutMs: o.timeoutMs,
    env: o.env,
    cwd: o.cwd,
    signal: o.signal,
  };
  // An --exec command's trials: judged as `soup run --probe` judges them, under the same cache key.
  const trainer: TrainerProbeOptions = {
    ...io,
    steps: o.steps,
    identity,
    deviceId: device.id,
    budgetBytes,
    timeoutMs: o.timeoutMs,
    timeoutName: '--timeout',
    maxLength,
    quantization: config?.training.quantization ?? 'none',
    loraR: config?.training.loraR ?? 0,
  };
  /** The trainer probe of an --exec trial command (placeholders filled but {batch_size}). */
  const execProbe = (command: string) => {
    if (!command.includes('{batch_size}'))
      throw new PlanUsageError(
        '--exec needs {batch_size} in the command, e.g. --exec "python train.py --bs {batch_size}"',
      );
    return trainerProbe(command, { ...trainer, base: o.base });
  };
  const flags = { refresh: o.refresh, noCache: o.noCache, cacheExceptionsOnly: o.cacheExceptionsOnly };
  const typed = o.exec ?? '';
  if (mode === 'exec' && o.tries !== undefined) {
    // checkTries refused --try without --global-batch-size, so there is a micro-batch to tune.
    const base = o.base;
    const tune = trainerTuneOptions({
      ...trainer,
      ...flags,
      command: typed,
      tries: checked.tries,
      micro: micro!,
      timeSteps: o.timeSteps ?? 8,
      baseOf: base !== undefined ? () => base : undefined,
      assertTrial: execProbe,
      start: o.start === undefined ? undefined : start,
      predict: o.predict,
    });
    return { kind: 'tune', tune: { ...tune, refresh: o.refresh, noCache: o.noCache } };
  }
  let probe: ChildProbeFn;
  let base: string;
  let what: string;
  let tier: string | null = null;
  let offloadTarget: 'cpu' | 'disk' | null = null;
  let granularity: string | null = null;
  let files: Record<string, string> | undefined;
  let keyUnknown: string | null = null;
  let execTrial: string | null = null;
  if (config) {
    const t = resolveTier(config, identity.device === 'cuda' ? identity.gpuMemoryGb : null);
    if (t.granularity === 'budget')
      throw new PlanUsageError(
        'soup probe measures fixed tiers; for gradient_checkpointing: budget run `soup plan`, which chooses the ' +
          'recompute set from measured steps',
      );
    const budget = budgetBytes !== null ? { budgetBytes } : {};
    const step = configStepProbe(config, t, { ...common, ...budget, file: configFile });
    ({ probe, base } = step);
    offloadTarget = step.offload?.target ?? null;
    tier = t.description;
    granularity = t.granularity;
    const { nLayers, dModel } = config.model;
    what =
      `${config.base} (${nLayers} layer${nLayers === 1 ? '' : 's'}, d_model ${dModel}` +
      `, max_length ${config.data.maxLength}), checkpointing ${t.description}` +
      `${step.offload ? `, offload ${step.offload.target} (segmented step)` : ''}`;
  } else if (mode === 'model') {
    const model = resolve(o.cwd, o.model ?? '');
    let bytes: Buffer;
    try {
      bytes = readFileSync(model);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? String(err);
      throw new PlanUsageError(`--model ${o.model}: cannot read it (${code})`, { cause: err });
    }
    const budget = budgetBytes !== null ? { budgetBytes } : {};
    ({ probe, base } = onnxModelProbe({
      ...common,
      ...budget,
      model,
      bytes,
      maxLength,
      vocabSize: o.vocabSize,
      base: o.base,
    }));
    what = `${basename(model)} (max_length ${maxLength})`;
  } else {
    execTrial = micro ? trialCommand(typed) : typed;
    ({ probe, files, base, keyUnknown } = execProbe(execTrial));
    what = `\`${redactCommand(typed, 'mask')}\``;
  }
  const key: CacheKeyFields = trainerKeyOf(base, trainer);
  const trial = execTrial;
  return {
    kind: 'search',
    mode,
    identity,
    micro,
    line:
      `probing ${what} on ${identity.gpuName} (${identity.gpuMemoryGb} GiB)` +
      `${budgetBytes !== null ? `, budget ${formatBytes(budgetBytes)}` : ''}: batch ${start} up to ${ceiling}`,
    change: async () =>
      trial !== null && o.base === undefined && !o.noCache && !o.refresh
        ? trainerChange({ env: o.env, cwd: o.cwd, command: trial, files: files ?? {}, key })
        : null,
    resolve: () =>
      resolveBatch({
        ...io,
        probe,
        budgetBytes,
        refresh: o.refresh,
        saveExceptionsOnly: o.cacheExceptionsOnly,
        predict: o.predict,
        advice: noFitAdvice({
          mode,
          device: identity.device === 'cuda' ? 'cuda' : 'cpu',
          granularity,
          offloadTarget,
          budgetBytes,
          budgetFrom: o.budgetBytes !== undefined ? 'flag' : budgetBytes !== null ? 'config' : null,
          maxLength,
        }),
        key,
        ...(files !== undefined ? { files } : {}),
        keyUnknown,
        reportsNotSaved: true,
        ...(micro
          ? { globalBatchSize: micro.globalBatchSize, worldSize: micro.worldSize, headroom: micro.headroom }
          : {}),
        start,
        ceiling,
        noCache: o.noCache,
      }),
    // A command that takes {probe_steps} was probed over PROBE_STEPS steps: one step at the answer gives the growth.
    growth: async (r) =>
      trial?.includes('{probe_steps}') && r.source === 'probe'
        ? stepGrowth({
            oneStep: trainerTrialProbe(withProbeSteps(trial, 1), trainer),
            batchSize: r.batchSize,
            peakBytes: r.chosen?.peak_bytes ?? null,
          })
        : null,
    record: (r, growth) => probeRecord(r, { device: identity, micro, gradCkpt: tier, offload: offloadTarget, growth }),
  };
}
