// `soup cache ls|path|clear`'s flags (loaded for every `soup` run: keep this file to commander).
import type { Command } from 'commander';
import { commandSpec, type JsonOption } from '../_command';

/** The `soup cache` group; its subcommands hang under it. */
export function defineCacheGroup(program: Command): Command {
  return program
    .command('cache')
    .description('the batch cache shared with the Python Soup CLI (~/.soup/batch_cache.json)')
    .addHelpText('after', '\nExamples:\n  soup cache ls\n  soup cache clear --key dcaa220005fb718e145b37b330901237');
}

export const cacheLsCommand = commandSpec<JsonOption>((cache) =>
  cache.command('ls').description('list cached batch sizes').option('--json', 'print the entries as JSON'),
);

export const cachePathCommand = commandSpec<JsonOption>((cache) =>
  cache
    .command('path')
    .description('print the cache file path (and whether SOUP_BATCH_CACHE_PATH was honoured)')
    .option('--json', 'print the result as JSON'),
);

export interface CacheClearOptions {
  /** 32 hex characters; all entries when absent. */
  key?: string;
  json?: boolean;
}

export const cacheClearCommand = commandSpec<CacheClearOptions>((cache) =>
  cache
    .command('clear')
    .description('remove every entry, or one with --key')
    .option('--key <key>', 'remove only this entry (32 hex characters, as `soup cache ls` shows)')
    .option('--json', 'print the result as JSON'),
);
