import { clearCache, listCacheEntries, resolveCachePath } from '@soup/batch-probe';
import { existsSync } from 'node:fs';
import type { CommandContext } from '../_context';
import { formatBytes } from '../format-bytes';
import { renderTable } from '../_table';
import { UsageError } from '../errors';
import type { CacheClearOptions } from './cache.options';
import type { JsonOption } from '../_command';

function location(ctx: CommandContext) {
  return { env: ctx.env, cwd: ctx.cwd };
}

function warnIgnored(ctx: CommandContext, ignored: string | undefined, path: string): void {
  if (ignored !== undefined)
    ctx.warn(
      `SOUP_BATCH_CACHE_PATH=${ignored} lies outside the home, working and temp directories: ignored, using ${path}`,
    );
}

/** `soup cache ls`. */
export async function runLs(_opts: JsonOption, ctx: CommandContext): Promise<void> {
  const info = resolveCachePath(location(ctx));
  warnIgnored(ctx, info.ignoredOverride, info.path);
  const entries = await listCacheEntries(location(ctx));
  ctx.emit({
    path: info.path,
    entries: entries.map((e) => {
      const p = e.provenance;
      return {
        key: e.key,
        batch_size: e.batchSize,
        provenance: p
          ? {
              base: p.base,
              max_length: p.maxLength,
              quantization: p.quantization ?? null,
              lora_r: p.loraR ?? null,
              gpu: p.gpuName,
              gpu_memory_gb: p.gpuMemoryGb ?? null,
              budget_bytes: p.budgetBytes,
              ceiling: p.ceiling,
              bound: p.bound,
              measurement: p.measurement,
              saved_at: p.savedAt,
              note: p.note ?? null,
            }
          : null,
      };
    }),
  });
  if (entries.length === 0) {
    ctx.say(`the batch cache is empty (${info.path})`);
    return;
  }
  const rows = entries.map((e) => {
    const p = e.provenance;
    if (!p) return [e.key, String(e.batchSize), '-', '-', '-', '-', '-', '-', '-', '-'];
    return [
      e.key,
      String(e.batchSize),
      p.base,
      // An --exec trainer never gets a length from soup: its own data decides it.
      p.base.startsWith('exec:') ? '-' : String(p.maxLength),
      p.gpuName,
      p.budgetBytes === null ? 'device' : formatBytes(p.budgetBytes),
      String(p.ceiling),
      p.bound,
      p.measurement,
      p.savedAt.replace(/\.\d+Z$/, 'Z'),
    ];
  });
  // Why an entry holds a value a search did not find (e.g. lowered after a mid-run out-of-memory): a line under it.
  const withNotes = rows.flatMap((row, i) => {
    const note = entries[i]!.provenance?.note;
    return note ? [row, ['', '', `↳ ${note}`, '', '', '', '', '', '', '']] : [row];
  });
  ctx.say(
    renderTable(
      [
        ['KEY', 'BATCH SIZE', 'BASE', 'MAX LEN', 'GPU', 'BUDGET', 'CEILING', 'BOUND', 'JUDGED BY', 'SAVED'],
        ...withNotes,
      ],
      ctx.style.bold,
    ),
  );
  const bare = entries.filter((e) => !e.provenance).length;
  ctx.say(
    ctx.style.dim(
      `${entries.length} entr${entries.length === 1 ? 'y' : 'ies'} in ${info.path}` +
        (bare > 0
          ? `; ${bare} without provenance (written by the Python tool or an older soup: used only when no ` +
            `--budget is given)`
          : ''),
    ),
  );
}

/** `soup cache path`. */
export async function runPath(_opts: JsonOption, ctx: CommandContext): Promise<void> {
  const info = resolveCachePath(location(ctx));
  warnIgnored(ctx, info.ignoredOverride, info.path);
  const exists = existsSync(info.path);
  ctx.emit({
    path: info.path,
    source: info.source,
    exists,
    ...(info.ignoredOverride ? { ignored_override: info.ignoredOverride } : {}),
  });
  ctx.say(info.path);
}

/** `soup cache clear [--key K]`. */
export async function runClear(opts: CacheClearOptions, ctx: CommandContext): Promise<void> {
  const key = opts.key;
  if (key !== undefined && !/^[0-9a-f]{32}$/.test(key)) {
    throw new UsageError(`--key must be 32 lowercase hex characters as \`soup cache ls\` shows (got "${key}")`);
  }
  const info = resolveCachePath(location(ctx));
  warnIgnored(ctx, info.ignoredOverride, info.path);
  const result = await clearCache({ ...location(ctx), ...(key !== undefined ? { key } : {}) });
  ctx.emit({ path: result.path, removed: result.removed, ...(key !== undefined ? { key } : {}) });
  if (key !== undefined)
    ctx.say(result.removed ? `removed ${key} from ${result.path}` : `no entry ${key} in ${result.path}`);
  else ctx.say(`removed ${result.removed} entr${result.removed === 1 ? 'y' : 'ies'} (${result.path})`);
}
