import { formatMicroBatch } from '@soup/batch-probe';
import { deviceIdentity } from '@soup/cuda-probe';
import { existsSync, rmdirSync } from 'node:fs';
import { dirname, relative } from 'node:path';
import type { CommandContext } from '../_context';
import { assertTrainable, offloadChoicesOf, offloadIssues, resolveTier } from '@soup/plan';
import { prepareRun, type PreparedRun } from '../_prepare-lines';
import { renderTable } from '../_table';
import { EXIT_CODES } from '../exit-codes';
import { formatBytes } from '../format-bytes';
import { loadConfig, ConfigError, type SoupConfig } from '@soup/config';
import type { PlanOptions } from './plan.options';

/** `soup plan`: what `soup train` would do on this device, measured. */
export async function run(opts: PlanOptions, ctx: CommandContext): Promise<number> {
  const loaded = loadConfig({ path: opts.config, cwd: ctx.cwd });
  const file = loaded.displayPath;
  for (const w of loaded.warnings) ctx.warn(`${file}${w.line ? `:${w.line}` : ''}: ${w.path}: ${w.message}`);
  const config = structuredClone(loaded.config);
  if (opts.device !== undefined) config.device = opts.device;
  const budgetFrom: 'flag' | 'config' | null =
    opts.budget !== undefined ? 'flag' : config.training.memoryBudgetBytes !== null ? 'config' : null;
  if (opts.budget !== undefined) config.training.memoryBudgetBytes = opts.budget;
  const issues = offloadIssues(config, ctx.cwd);
  const offload = { errors: issues.errors.map((i) => i.message), warnings: issues.warnings.map((i) => i.message) };
  let blocking: string[] = [];
  try {
    assertTrainable(config, file, ctx.cwd);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    blocking = err.issues.map((i) => `${i.path}: ${i.message}`);
  }
  // Everything that can be checked without a probe is checked first: a config train would refuse
  // is reported at once, before any step runs.
  if (blocking.length > 0) return refuseEarly(ctx, file, config, blocking, offload);
  // Disk offload's probes and timing make its scratch folder (and the output folder above it):
  // soup plan trains nothing, so what it created and left empty goes again.
  const scratch = offloadChoicesOf(config, ctx.cwd).find((o) => o?.saveDir)?.saveDir ?? null;
  const created = scratch === null ? [] : missingDirs(scratch, ctx.cwd);
  let p: Awaited<ReturnType<typeof prepareRun>>;
  try {
    p = await prepareRun({
      ctx,
      config,
      noCache: opts.cache === false,
      measure: true,
      predict: opts.predict !== false,
      budgetFrom,
    });
  } finally {
    for (const d of created) removeEmptyDir(d);
  }
  const m = p.measured;
  const fits = m ? m.result === 'fit' : null;
  const tokensPerStep = p.globalBatchSize * config.data.maxLength;
  const horizon = config.training.steps;
  const pushEvery = config.hub.pushEverySteps ?? Math.max(1, Math.floor(horizon / 4));
  const setting = config.training.activationOffloading;
  const applied = p.offload
    ? `${p.offload.target}${p.offload.saveDir ? ` → ${relative(ctx.cwd, p.offload.saveDir)}` : ''}, segmented step`
    : 'off';
  const offloadText =
    setting === null
      ? 'off'
      : offload.errors.length > 0
        ? `${setting}: ${offload.errors.join(' ')}`
        : setting === 'auto'
          ? `${p.offloadChoice ?? 'auto → off (not measured: the choice is measured with micro_batch_size: auto)'}` +
            `${p.offload ? `; ${applied}` : ''}`
          : `${applied}${offload.warnings.length ? ` (${offload.warnings.join(' ')})` : ''}`;
  const result = {
    config: file,
    device: { spec: config.device.spec, name: p.identity.gpuName, memory_gb: p.identity.gpuMemoryGb },
    model: {
      base: config.base,
      n_layers: config.model.nLayers,
      d_model: config.model.dModel,
      n_heads: config.model.nHeads,
      max_length: config.data.maxLength,
    },
    batch_size: p.globalBatchSize,
    micro_batch_size: p.microBatchSize,
    grad_accum: p.accumulation,
    batch_source: p.batchSource,
    /**
     * exact (a larger size failed), capped (the search's ceiling: a larger size may fit), unproven, or null (not
     * searched).
     */
    batch_bound: p.bound,
    batch_ceiling: p.ceiling,
    cache_key: p.cacheKey,
    grad_ckpt: {
      setting: config.training.gradientCheckpointing,
      description: p.tier.description,
      recompute: p.tier.recompute,
    },
    ...(p.tuned ? { tune: p.tuned } : {}),
    offload: {
      setting,
      /** The offload this run applies (auto: the measured choice). */
      target: p.offload?.target ?? null,
      save_dir: p.offload?.saveDir ?? null,
      execution: p.offload ? 'segmented' : 'fused',
      errors: offload.errors,
      warnings: offload.warnings,
    },
    peak_bytes: m?.peak_bytes ?? null,
    budget_bytes: m?.budget_bytes ?? null,
    fits,
    tokens_per_step: tokensPerStep,
    steps: horizon,
    push_every_steps: pushEvery,
    problems: blocking,
    trials: p.trials,
  };
  ctx.emit(result);
  printPlan(ctx, config, p, { offloadText, blocking, tokensPerStep, horizon, pushEvery });
  if (blocking.length > 0) return EXIT_CODES.config;
  if (fits === false) return EXIT_CODES.noFit;
  return EXIT_CODES.ok;
}

/** The plan as the human table (the JSON result is emitted before it). */
function printPlan(
  ctx: CommandContext,
  config: SoupConfig,
  p: PreparedRun,
  t: { offloadText: string; blocking: string[]; tokensPerStep: number; horizon: number; pushEvery: number },
): void {
  const { offloadText, blocking, tokensPerStep, horizon, pushEvery } = t;
  const m = p.measured;
  const fits = m ? m.result === 'fit' : null;
  const rows: string[][] = [
    ['', ''],
    ['device', `${config.device.spec}: ${p.identity.gpuName}, ${p.identity.gpuMemoryGb} GiB`],
    [
      'model',
      `${config.base}: ${config.model.nLayers} layers, d_model ${config.model.dModel}, ${config.model.nHeads}` +
        ` heads, max_length ${config.data.maxLength}`,
    ],
    [
      'batch',
      `micro ${formatMicroBatch({ microBatchSize: p.microBatchSize, accumulation: p.accumulation })}` +
        ` (micro-batch: ${p.batchSource}${p.cacheKey ? `, key ${p.cacheKey}` : ''})` +
        (p.bound === 'capped'
          ? ctx.style.yellow(
              `  capped: the ceiling of the search (G = ${p.ceiling}, no accumulation), not a measured limit; ` +
                'a larger micro-batch is never needed',
            )
          : ''),
    ],
    [
      'checkpointing',
      p.tier.description +
        (p.tier.recompute.length && p.tier.granularity !== 'full' ? ` [${p.tier.recompute.join(', ')}]` : ''),
    ],
    ['offload', offloadText],
    [
      'peak / budget',
      m
        ? `${formatBytes(m.peak_bytes)} / ${formatBytes(m.budget_bytes)}  ` +
          `${fits ? ctx.style.green('fits') : ctx.style.red(m.result === 'fit' ? 'fits' : m.result)}`
        : 'not measured',
    ],
    ['per step', `${tokensPerStep} tokens`],
    [
      'steps',
      pushEvery < horizon ? `${horizon}, a checkpoint every ${pushEvery}` : `${horizon}, a checkpoint at the end`,
    ],
  ];
  for (const b of blocking) rows.push(['problem', ctx.style.red(b)]);
  ctx.say(
    renderTable(rows)
      .split('\n')
      .slice(1)
      .map((l) => `  ${l}`)
      .join('\n'),
  );
}

/** `soup plan` on a config `soup train` would refuse: the problems and what is known, no probe, exit 3. */
async function refuseEarly(
  ctx: CommandContext,
  file: string,
  config: SoupConfig,
  blocking: string[],
  offload: { errors: string[]; warnings: string[] },
): Promise<number> {
  const identity = await deviceIdentity({ device: config.device.kind, deviceId: config.device.id });
  const tier = resolveTier(config, identity.device === 'cuda' ? identity.gpuMemoryGb : null);
  const batch = config.training.batchSize;
  const micro = config.training.microBatchSize === 'auto' ? null : config.training.microBatchSize;
  ctx.emit({
    config: file,
    device: { spec: config.device.spec, name: identity.gpuName, memory_gb: identity.gpuMemoryGb },
    model: {
      base: config.base,
      n_layers: config.model.nLayers,
      d_model: config.model.dModel,
      n_heads: config.model.nHeads,
      max_length: config.data.maxLength,
    },
    batch_size: batch,
    micro_batch_size: micro,
    grad_accum: micro === null ? null : batch / micro,
    batch_source: micro === null ? null : 'config',
    batch_bound: null,
    batch_ceiling: null,
    cache_key: null,
    grad_ckpt: {
      setting: config.training.gradientCheckpointing,
      description: tier.description,
      recompute: tier.recompute,
    },
    offload: {
      target: config.training.activationOffloading,
      save_dir: null,
      execution: null,
      errors: offload.errors,
      warnings: offload.warnings,
    },
    peak_bytes: null,
    budget_bytes: null,
    fits: null,
    tokens_per_step: batch * config.data.maxLength,
    steps: config.training.steps,
    push_every_steps: config.hub.pushEverySteps ?? Math.max(1, Math.floor(config.training.steps / 4)),
    problems: blocking,
    trials: [],
  });
  const rows: string[][] = [
    ['', ''],
    ['device', `${config.device.spec}: ${identity.gpuName}, ${identity.gpuMemoryGb} GiB`],
    [
      'model',
      `${config.base}: ${config.model.nLayers} layers, d_model ${config.model.dModel}, ${config.model.nHeads}` +
        ` heads, max_length ${config.data.maxLength}`,
    ],
    [
      'batch',
      micro === null
        ? `${batch}; micro-batch auto: not probed (fix the problems first)`
        : `micro ${formatMicroBatch({ microBatchSize: micro, accumulation: batch / micro })} (config)`,
    ],
    ['checkpointing', tier.description],
    [
      'offload',
      config.training.activationOffloading === null
        ? 'off'
        : `${config.training.activationOffloading}${offload.errors.length ? `: ${offload.errors.join(' ')}` : ''}`,
    ],
    ['peak / budget', 'not measured (fix the problems first)'],
  ];
  for (const b of blocking) rows.push(['problem', ctx.style.red(b)]);
  ctx.say(
    renderTable(rows)
      .split('\n')
      .slice(1)
      .map((l) => `  ${l}`)
      .join('\n'),
  );
  ctx.warn(
    `${file}: soup train would refuse this config (${blocking.length} problem${blocking.length === 1 ? '' : 's'}` +
      `); nothing was probed`,
  );
  return EXIT_CODES.config;
}

/** The folders on the way to `dir` (itself first) that do not exist yet, below `root`. */
function missingDirs(dir: string, root: string): string[] {
  const out: string[] = [];
  for (let d = dir; !existsSync(d) && d.startsWith(`${root}/`); d = dirname(d)) out.push(d);
  return out;
}

function removeEmptyDir(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // not empty (someone else's files) or already gone: leave it
  }
}
