import { readFileSync, statSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { ConfigError, type ConfigIssue } from './errors';
import { validateConfig, type SoupConfig } from './validate-config';

/** Options of {@link loadConfig}. */
export interface LoadConfigOptions {
  /** Path of soup.yaml. @default "soup.yaml" */
  path?: string;
  /** Directory relative paths resolve against. @default process.cwd() */
  cwd?: string;
}

/** What {@link loadConfig} returns: the config and any warnings (the caller prints them). */
export interface LoadedConfig {
  config: SoupConfig;
  warnings: ConfigIssue[];
  /** The path as the user should see it (relative to cwd when shorter). */
  displayPath: string;
}

/** Reads and validates soup.yaml; throws {@link ConfigError} listing every problem. */
export function loadConfig(opts: LoadConfigOptions = {}): LoadedConfig {
  const cwd = opts.cwd ?? process.cwd();
  const file = resolve(cwd, opts.path ?? 'soup.yaml');
  const rel = relative(cwd, file);
  const displayPath = rel && !rel.startsWith('..') && rel.length < file.length ? rel : file;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const message =
      code === 'ENOENT'
        ? `no such file; run \`soup init\` to write one, or pass -c <path>`
        : code === 'EISDIR'
          ? 'is a directory, not a soup.yaml file'
          : `cannot read it (${code ?? String(err)})`;
    throw new ConfigError({
      file: displayPath,
      issues: [{ path: '', message }],
      code: 'SOUP_CONFIG_NOT_FOUND',
      cause: err,
    });
  }
  const isFile = (p: string): boolean => {
    try {
      return statSync(p).isFile();
    } catch {
      return false;
    }
  };
  const isDirectory = (p: string): boolean => {
    try {
      return statSync(p).isDirectory();
    } catch {
      return false;
    }
  };
  const result = validateConfig({ text, file, cwd, isFile, isDirectory });
  if (!result.config) throw new ConfigError({ file: displayPath, issues: result.errors });
  return { config: result.config, warnings: result.warnings, displayPath };
}
