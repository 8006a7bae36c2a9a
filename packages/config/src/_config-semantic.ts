// The rules of soup.yaml a schema cannot say: data files exist, heads divide the width, sizes and
// durations parse, micro_batch_size divides batch_size, settings that need or ignore another.
import pathModule from 'node:path';
import { divisorsOf } from '@soup/batch-probe';
import type { Document, LineCounter } from 'yaml';
import { parsePercent } from './_batch-config';
import { got } from './_config-describe';
import { locate } from './_config-lines';
import type { ConfigIssue } from './errors';
import { parseBytes } from './parse-bytes';
import { parseDuration } from './parse-duration';
import type { ValidateConfigOptions } from './soup-config';

export function semanticChecks(
  data: Record<string, unknown>,
  doc: Document,
  lc: LineCounter,
  errors: ConfigIssue[],
  warnings: ConfigIssue[],
  opts: ValidateConfigOptions,
): void {
  if (opts.isFile) {
    const d = data.data as Record<string, unknown>;
    for (const key of ['train', 'val'] as const) {
      const rel = d[key];
      if (typeof rel !== 'string') continue;
      const abs = pathModule.resolve(pathModule.dirname(opts.file), rel);
      if (!opts.isFile(abs)) {
        errors.push({
          path: `data.${key}`,
          ...locate(doc, lc, ['data', key], false),
          message: opts.isDirectory?.(abs)
            ? `${abs} is a directory: data.${key} names one UTF-8 text file`
            : `no such file: ${abs} (paths are relative to ${pathModule.basename(opts.file)}'s folder)`,
        });
      }
    }
  }
  const model = data.model as Record<string, number>;
  const training = data.training as Record<string, unknown>;
  const dModel = model.d_model!;
  const nHeads = model.n_heads!;
  if (dModel % nHeads !== 0) {
    errors.push({
      path: 'model.n_heads',
      ...locate(doc, lc, ['model', 'n_heads'], false),
      message:
        `must divide model.d_model (${dModel} is not a multiple of ${nHeads}); ` +
        `e.g. ${[1, 2, 4, 8, 16].filter((h) => dModel % h === 0).pop() ?? 1}`,
    });
  }
  const budget = training.memory_budget;
  if (budget !== undefined && budget !== null && parseBytes(budget as string | number) === undefined) {
    errors.push({
      path: 'training.memory_budget',
      ...locate(doc, lc, ['training', 'memory_budget'], false),
      message: `must be a size like 6GiB or 512MiB (got ${got(budget)})`,
    });
  }
  const limit = training.time_limit;
  if (limit !== undefined && limit !== null && parseDuration(String(limit)) === undefined) {
    errors.push({
      path: 'training.time_limit',
      ...locate(doc, lc, ['training', 'time_limit'], false),
      message: `must be a duration like 8h45m, 90m or 45s (got ${got(limit)})`,
    });
  }
  const hubSection = data.hub as Record<string, unknown> | undefined;
  const ttl = hubSection?.lease_ttl;
  if (ttl !== undefined && (parseDuration(String(ttl)) ?? 0) < 1000) {
    errors.push({
      path: 'hub.lease_ttl',
      ...locate(doc, lc, ['hub', 'lease_ttl'], false),
      message: `must be a duration of at least 1 s, like 10m or 90s (got ${got(ttl)})`,
    });
  }
  const interval = hubSection?.min_commit_interval;
  if (interval !== undefined && String(interval) !== '0' && parseDuration(String(interval)) === undefined) {
    errors.push({
      path: 'hub.min_commit_interval',
      ...locate(doc, lc, ['hub', 'min_commit_interval'], false),
      message: `must be a duration like 5m or 90s, or 0 (got ${got(interval)})`,
    });
  }
  if (training.gradient_checkpointing === 'budget' && (budget === undefined || budget === null)) {
    errors.push({
      path: 'training.gradient_checkpointing',
      ...locate(doc, lc, ['training', 'gradient_checkpointing'], false),
      message:
        'budget needs training.memory_budget (e.g. memory_budget: 2GiB), the memory the recompute set must fit in',
    });
  }
  const bs = training.batch_size as number;
  const micro = training.micro_batch_size;
  if (typeof micro === 'number' && bs % micro !== 0) {
    const divs = divisorsOf(bs).filter((d) => d <= micro);
    errors.push({
      path: 'training.micro_batch_size',
      ...locate(doc, lc, ['training', 'micro_batch_size'], false),
      message:
        `must divide batch_size (${bs}), so that micro_batch_size × accumulation = batch_size; ` +
        `e.g. ${divs.at(-1) ?? 1}, or auto`,
    });
  }
  if (training.auto_batch_size_strategy !== 'auto' && micro !== 'auto' && data.training) {
    warnings.push({
      path: 'training.auto_batch_size_strategy',
      ...locate(doc, lc, ['training', 'auto_batch_size_strategy'], false),
      message: `has no effect: micro_batch_size is ${String(micro)}, not auto`,
    });
  }
  const headroom = training.memory_headroom;
  if (typeof headroom === 'string' && parsePercent(headroom)! >= 1) {
    errors.push({
      path: 'training.memory_headroom',
      ...locate(doc, lc, ['training', 'memory_headroom'], false),
      message: `must be below 100% (got ${got(headroom)})`,
    });
  }
  const lora = training.lora as { r?: number } | undefined;
  if (training.quantization !== 'none' || (lora?.r ?? 0) > 0) {
    warnings.push({
      path: training.quantization !== 'none' ? 'training.quantization' : 'training.lora.r',
      ...locate(
        doc,
        lc,
        training.quantization !== 'none' ? ['training', 'quantization'] : ['training', 'lora', 'r'],
        false,
      ),
      message:
        'is a batch-cache key field only: soup train trains the full float32 model (quantization none, lora.r 0); ' +
        "soup probe --exec passes it to your trainer's cache key",
    });
  }
}
