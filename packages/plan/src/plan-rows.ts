// soup plan's answer as two-column rows (label, text): the words of PlanReport, for a caller to lay out as a table.
import { formatBytes, formatMicroBatch } from '@soup/batch-probe';
import type { SoupConfig } from '@soup/config';
import { relative } from 'node:path';
import type { PlanRun, PlanReport } from './plan-run';
import type { PreparedRun } from './prepare-run';

/** Colours a caller may give the rows' verdicts (plain text when left out). */
export interface PlanRowStyle {
  green(s: string): string;
  red(s: string): string;
  yellow(s: string): string;
}

const PLAIN: PlanRowStyle = { green: (s) => s, red: (s) => s, yellow: (s) => s };

/** Options of {@link planRows}: planRun's answer, the config it planned, the folder paths are shown from. */
export interface PlanRowsOptions extends PlanRun {
  config: SoupConfig;
  cwd: string;
  style?: PlanRowStyle;
}

/**
 * The plan's rows: device, model, batch, checkpointing, offload, peak against the budget, tokens per step, steps; for a
 * config soup train would refuse, what is known without a probe and one `problem` row per problem.
 */
export function planRows(o: PlanRowsOptions): [string, string][] {
  const style = o.style ?? PLAIN;
  const { config, report: r, prepared: p } = o;
  return p === null ? refusedRows(config, r, o.tier.description, style) : measuredRows(o, p, style);
}

function measuredRows(o: PlanRowsOptions, p: PreparedRun, style: PlanRowStyle): [string, string][] {
  const { report: r, cwd } = o;
  const m = p.measured;
  const { setting, errors, warnings } = r.offload;
  const applied = p.offload
    ? `${p.offload.target}${p.offload.saveDir ? ` → ${relative(cwd, p.offload.saveDir)}` : ''}, segmented step`
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
  return [
    ...headRows(o.config, r),
    [
      'batch',
      `micro ${formatMicroBatch({ microBatchSize: p.microBatchSize, accumulation: p.accumulation })}` +
        ` (micro-batch: ${p.batchSource}${p.cacheKey ? `, key ${p.cacheKey}` : ''})` +
        (p.bound === 'capped'
          ? style.yellow(
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
          `${r.fits ? style.green('fits') : style.red(m.result === 'fit' ? 'fits' : m.result)}`
        : 'not measured',
    ],
    ['per step', `${r.tokens_per_step} tokens`],
    [
      'steps',
      pushEvery < horizon ? `${horizon}, a checkpoint every ${pushEvery}` : `${horizon}, a checkpoint at the end`,
    ],
  ];
}

/** A config soup train would refuse: the problems and what is known, nothing probed. */
function refusedRows(config: SoupConfig, r: PlanReport, tier: string, style: PlanRowStyle): [string, string][] {
  const batch = r.batch_size;
  const micro = r.micro_batch_size;
  const setting = config.training.activationOffloading;
  return [
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
    ...r.problems.map((b): [string, string] => ['problem', style.red(b)]),
  ];
}

/** The device and model rows both views start with. */
function headRows(config: SoupConfig, r: PlanReport): [string, string][] {
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
