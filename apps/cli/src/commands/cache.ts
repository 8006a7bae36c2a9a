import {
  cacheEntryRecord,
  clearCache,
  isCacheKey,
  listCacheEntries,
  resolveCachePath,
  type CachePathInfo,
} from '@soup/batch-probe';
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

/** The cache file, warning when SOUP_BATCH_CACHE_PATH was ignored. */
function cachePath(ctx: CommandContext): CachePathInfo {
  const info = resolveCachePath(location(ctx));
  if (info.ignoredOverride !== undefined)
    ctx.warn(
      `SOUP_BATCH_CACHE_PATH=${info.ignoredOverride} lies outside the home, working and temp directories: ignored, ` +
        `using ${info.path}`,
    );
  return info;
}

/** `soup cache ls`. */
export async function runLs(_opts: JsonOption, ctx: CommandContext): Promise<void> {
  const info = cachePath(ctx);
  const entries = await listCacheEntries(location(ctx));
  ctx.emit({ path: info.path, entries: entries.map(cacheEntryRecord) });
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
      // A trainer command can be hundreds of characters: the table shows its start, --json all of it.
      p.base.length > 40 ? `${p.base.slice(0, 39)}…` : p.base,
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
  const info = cachePath(ctx);
  const exists = existsSync(info.path);
  ctx.emit({
    path: info.path,
    source: info.source,
    exists,
    ...(info.ignoredOverride ? { ignored_override: info.ignoredOverride } : {}),
  });
  // The path alone, for `$(soup cache path)`; a value the user asked for, as --json's object is.
  if (ctx.json) ctx.say(info.path);
  else ctx.raw.stdout.write(`${info.path}\n`);
}

/** `soup cache clear [--key K]`. */
export async function runClear(opts: CacheClearOptions, ctx: CommandContext): Promise<void> {
  const key = opts.key;
  if (key !== undefined && !isCacheKey(key)) {
    throw new UsageError(`--key must be 32 lowercase hex characters as \`soup cache ls\` shows (got "${key}")`);
  }
  // Only for its warning: clearCache resolves the same path.
  cachePath(ctx);
  const result = await clearCache({ ...location(ctx), ...(key !== undefined ? { key } : {}) });
  ctx.emit({ path: result.path, removed: result.removed, ...(key !== undefined ? { key } : {}) });
  if (key !== undefined)
    ctx.say(result.removed ? `removed ${key} from ${result.path}` : `no entry ${key} in ${result.path}`);
  else ctx.say(`removed ${result.removed} entr${result.removed === 1 ? 'y' : 'ies'} (${result.path})`);
}
