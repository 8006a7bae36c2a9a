import { formatMicroBatch } from '@soup/batch-probe';
import { relative } from 'node:path';
import type { CommandContext } from '../_context';
import { type PlanReport, planRun, type PreparedRun } from '@soup/plan';
import { prepareIo } from '../_prepare-lines';
import { renderTable } from '../_table';
import { EXIT_CODES } from '../exit-codes';
import { formatBytes } from '../format-bytes';
import { configWithOverrides, loadConfig, type SoupConfig } from '@soup/config';
import type { PlanOptions } from './plan.options';

/** `soup plan`: what `soup train` would do on this device, measured. */
export async function run(opts: PlanOptions, ctx: CommandContext): Promise<number> {
  const loaded = loadConfig({ path: opts.config, cwd: ctx.cwd });
  const file = loaded.displayPath;
  for (const w of loaded.warnings) ctx.warn(`${file}${w.line ? `:${w.line}` : ''}: ${w.path}: ${w.message}`);
  const { config, budgetFrom } = configWithOverrides(loaded.config, {
    device: opts.device,
    budgetBytes: opts.budget,
    cwd: ctx.cwd,
  });
  const {
    report: r,
    prepared: p,
    tier,
  } = await planRun({
    ...prepareIo(ctx),
    config,
    file,
    noCache: opts.cache === false,
    predict: opts.predict !== false,
    budgetFrom,
  });
  ctx.emit(r);
  if (p === null) return refuseEarly(ctx, config, r, tier.description);
  printPlan(ctx, config, p, r);
  if (r.fits === false) return EXIT_CODES.noFit;
  return EXIT_CODES.ok;
}

/** The plan as the human table (the JSON result is emitted before it). */
function printPlan(ctx: CommandContext, config: SoupConfig, p: PreparedRun, r: PlanReport): void {
  const m = p.measured;
  const { setting, errors, warnings } = r.offload;
  const applied = p.offload
    ? `${p.offload.target}${p.offload.saveDir ? ` → ${relative(ctx.cwd, p.offload.saveDir)}` : ''}, segmented step`
    : 'off';
  const offloadText =
    setting === null
      ? 'off'
      : errors.length > 0
        ? `${setting}: ${errors.join(' ')}`
        : setting === 'auto'
          ? `${p.offloadChoice ?? 'auto → off (not measured: the choice is measured with micro_batch_size: auto)'}` +
            `${p.offload ? `; ${applied}` : ''}`
          : `${applied}${warnings.length ? ` (${warnings.join(' ')})` : ''}`;
  const horizon = r.steps;
  const pushEvery = r.push_every_steps;
  printRows(ctx, [
    ...headRows(config, r),
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
          `${r.fits ? ctx.style.green('fits') : ctx.style.red(m.result === 'fit' ? 'fits' : m.result)}`
        : 'not measured',
    ],
    ['per step', `${r.tokens_per_step} tokens`],
    [
      'steps',
      pushEvery < horizon ? `${horizon}, a checkpoint every ${pushEvery}` : `${horizon}, a checkpoint at the end`,
    ],
  ]);
}

/** `soup plan` on a config `soup train` would refuse: the problems and what is known, no probe, exit 3. */
function refuseEarly(ctx: CommandContext, config: SoupConfig, r: PlanReport, tier: string): number {
  const batch = r.batch_size;
  const micro = r.micro_batch_size;
  const setting = config.training.activationOffloading;
  const blocking = r.problems;
  printRows(ctx, [
    ...headRows(config, r),
    [
      'batch',
      micro === null
        ? `${batch}; micro-batch auto: not probed (fix the problems first)`
        : `micro ${formatMicroBatch({ microBatchSize: micro, accumulation: batch / micro })} (config)`,
    ],
    ['checkpointing', tier],
    [
      'offload',
      setting === null ? 'off' : `${setting}${r.offload.errors.length ? `: ${r.offload.errors.join(' ')}` : ''}`,
    ],
    ['peak / budget', 'not measured (fix the problems first)'],
    ...blocking.map((b) => ['problem', ctx.style.red(b)]),
  ]);
  ctx.warn(
    `${r.config}: soup train would refuse this config (${blocking.length} problem${blocking.length === 1 ? '' : 's'}` +
      `); nothing was probed`,
  );
  return EXIT_CODES.config;
}

/** The device and model rows both views start with. */
function headRows(config: SoupConfig, r: PlanReport): string[][] {
  const { model } = r;
  return [
    ['device', `${config.device.spec}: ${r.device.name}, ${r.device.memory_gb} GiB`],
    [
      'model',
      `${model.base}: ${model.n_layers} layers, d_model ${model.d_model}, ${model.n_heads}` +
        ` heads, max_length ${model.max_length}`,
    ],
  ];
}

/** The rows as an indented two-column table, without a header. */
function printRows(ctx: CommandContext, rows: string[][]): void {
  ctx.say(
    renderTable([['', ''], ...rows])
      .split('\n')
      .slice(1)
      .map((l) => `  ${l}`)
      .join('\n'),
  );
}
