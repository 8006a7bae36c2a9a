import { clearCache, listCacheEntries, resolveCachePath } from '@soup/batch-probe';
import { existsSync } from 'node:fs';
import type { CommandContext } from '../_context';
import { renderTable } from '../_table';
import { UsageError } from '../errors';

function location(ctx: CommandContext) {
  return { env: ctx.env, cwd: ctx.cwd };
}

function warnIgnored(ctx: CommandContext, ignored: string | undefined, path: string): void {
  if (ignored !== undefined) ctx.warn(`SOUP_BATCH_CACHE_PATH=${ignored} lies outside the home, working and temp directories: ignored, using ${path}`);
}

/** `soup cache ls`. */
export async function runLs(_opts: Record<string, unknown>, ctx: CommandContext): Promise<void> {
  const info = resolveCachePath(location(ctx));
  warnIgnored(ctx, info.ignoredOverride, info.path);
  const entries = await listCacheEntries(location(ctx));
  ctx.emit({ path: info.path, entries: entries.map((e) => ({ key: e.key, batch_size: e.batchSize })) });
  if (entries.length === 0) {
    ctx.say(`the batch cache is empty (${info.path})`);
    return;
  }
  ctx.say(renderTable([['KEY', 'BATCH SIZE'], ...entries.map((e) => [e.key, String(e.batchSize)])], ctx.style.bold));
  ctx.say(ctx.style.dim(`${entries.length} entr${entries.length === 1 ? 'y' : 'ies'} in ${info.path}`));
}

/** `soup cache path`. */
export async function runPath(_opts: Record<string, unknown>, ctx: CommandContext): Promise<void> {
  const info = resolveCachePath(location(ctx));
  warnIgnored(ctx, info.ignoredOverride, info.path);
  const exists = existsSync(info.path);
  ctx.emit({ path: info.path, source: info.source, exists, ...(info.ignoredOverride ? { ignored_override: info.ignoredOverride } : {}) });
  ctx.say(info.path);
}

/** `soup cache clear [--key K]`. */
export async function runClear(opts: Record<string, unknown>, ctx: CommandContext): Promise<void> {
  const key = opts.key === undefined ? undefined : String(opts.key);
  if (key !== undefined && !/^[0-9a-f]{32}$/.test(key)) {
    throw new UsageError(`--key must be 32 lowercase hex characters as \`soup cache ls\` shows (got "${key}")`);
  }
  const info = resolveCachePath(location(ctx));
  warnIgnored(ctx, info.ignoredOverride, info.path);
  const result = await clearCache({ ...location(ctx), ...(key !== undefined ? { key } : {}) });
  ctx.emit({ path: result.path, removed: result.removed, ...(key !== undefined ? { key } : {}) });
  if (key !== undefined) ctx.say(result.removed ? `removed ${key} from ${result.path}` : `no entry ${key} in ${result.path}`);
  else ctx.say(`removed ${result.removed} entr${result.removed === 1 ? 'y' : 'ies'} (${result.path})`);
}
