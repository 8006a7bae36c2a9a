import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** Where a Hugging Face token can come from, in the order {@link resolveHubToken} tries them. */
export type HubTokenPlace = 'HF_TOKEN' | 'HF_TOKEN_PATH' | 'HF_HOME' | 'default';

/** One place {@link resolveHubToken} looked at, and what it found there (never the token). */
export interface HubTokenAttempt {
  place: HubTokenPlace;
  /**
   * The variable (`HF_TOKEN`, `HUGGING_FACE_HUB_TOKEN`) or the token file's path; null when the variable naming the
   * file is unset.
   */
  where: string | null;
  /**
   * `found`; `unset` (variable not set); `empty` (set, or a file, holding only whitespace);
   * `missing` (no such file); `unreadable` (a folder, no permission, ...: see `error`).
   */
  outcome: 'found' | 'unset' | 'empty' | 'missing' | 'unreadable';
  /** The error code of an unreadable file (e.g. `EACCES`, `EISDIR`). */
  error?: string;
}

/** What {@link resolveHubToken} found. */
export interface ResolvedHubToken {
  /** The token, trimmed; null when none of the places holds one. Never log it. */
  token: string | null;
  /** The place the token came from; null when none. */
  place: HubTokenPlace | null;
  /** The variable or file it came from (e.g. `/home/me/.cache/huggingface/token`); null when none. */
  where: string | null;
  /** Every place tried, in order, up to and including the one that held the token. */
  attempts: HubTokenAttempt[];
}

/** Options of {@link resolveHubToken}. */
export interface ResolveHubTokenOptions {
  /** Environment to read. @default process.env */
  env?: Record<string, string | undefined>;
  /** Home directory for `~` and the default cache. @default env.HOME, else os.homedir() */
  homeDir?: string;
  /** Reads a token file (tests inject failures). @default fs.readFileSync(path, 'utf8') */
  readFile?: (path: string) => string;
}

/** Strips whitespace and line breaks, as huggingface_hub does; an empty result means "no token". */
export function cleanHubToken(raw: string | undefined | null): string | null {
  if (raw === undefined || raw === null) return null;
  const t = raw.replace(/[\r\n]/g, '').trim();
  return t === '' ? null : t;
}

/**
 * `~` and `$VAR` / `${VAR}` expansion, as Python's `os.path.expanduser(os.path.expandvars(...))` (unknown variables
 * stay as written).
 */
function expandPath(p: string, env: Record<string, string | undefined>, home: string): string {
  const vars = p.replace(
    /\$(?:\{(\w+)\}|(\w+))/g,
    (m, a: string | undefined, b: string | undefined) => env[(a ?? b)!] ?? m,
  );
  return vars === '~' || vars.startsWith('~/') ? join(home, vars.slice(1)) : vars;
}

/**
 * Finds the Hugging Face token the way `huggingface_hub` does, first hit wins:
 * 1. `HF_TOKEN` (or its legacy alias `HUGGING_FACE_HUB_TOKEN`);
 * 2. the file `HF_TOKEN_PATH` names;
 * 3. `$HF_HOME/token`;
 * 4. `~/.cache/huggingface/token` (`$XDG_CACHE_HOME/huggingface/token` when XDG_CACHE_HOME is set) —
 *    the file `hf auth login` writes.
 *
 * Each value is trimmed (spaces, line breaks); an empty variable or file counts as absent and the
 * next place is tried, as is a file that does not exist. An unreadable file (a folder, no permission)
 * is skipped too and reported in `attempts`. No I/O beyond reading those files; nothing is logged.
 */
export function resolveHubToken(opts: ResolveHubTokenOptions = {}): ResolvedHubToken {
  const env = opts.env ?? process.env;
  const home = opts.homeDir ?? (env.HOME || homedir());
  const read = opts.readFile ?? ((path: string) => readFileSync(path, 'utf8'));
  const attempts: HubTokenAttempt[] = [];
  const hit = (place: HubTokenPlace, where: string, token: string): ResolvedHubToken => {
    attempts.push({ place, where, outcome: 'found' });
    return { token, place, where, attempts };
  };

  // 1. The variable.
  for (const name of ['HF_TOKEN', 'HUGGING_FACE_HUB_TOKEN'] as const) {
    const raw = env[name];
    if (raw === undefined) {
      if (name === 'HF_TOKEN') attempts.push({ place: 'HF_TOKEN', where: name, outcome: 'unset' });
      continue;
    }
    const token = cleanHubToken(raw);
    if (token !== null) return hit('HF_TOKEN', name, token);
    attempts.push({ place: 'HF_TOKEN', where: name, outcome: 'empty' });
  }

  // 2-4. The files.
  const fromFile = (place: HubTokenPlace, path: string | null): ResolvedHubToken | null => {
    if (path === null) {
      attempts.push({ place, where: null, outcome: 'unset' });
      return null;
    }
    let text: string;
    try {
      text = read(path);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') attempts.push({ place, where: path, outcome: 'missing' });
      else attempts.push({ place, where: path, outcome: 'unreadable', error: code ?? (err as Error).name });
      return null;
    }
    const token = cleanHubToken(text);
    if (token !== null) return hit(place, path, token);
    attempts.push({ place, where: path, outcome: 'empty' });
    return null;
  };
  const nonEmpty = (v: string | undefined): string | null => (v === undefined || v.trim() === '' ? null : v.trim());
  const tokenPath = nonEmpty(env.HF_TOKEN_PATH);
  const hfHome = nonEmpty(env.HF_HOME);
  const xdg = nonEmpty(env.XDG_CACHE_HOME);
  const defaultPath = join(xdg !== null ? expandPath(xdg, env, home) : join(home, '.cache'), 'huggingface', 'token');
  return (
    fromFile('HF_TOKEN_PATH', tokenPath === null ? null : expandPath(tokenPath, env, home)) ??
    fromFile('HF_HOME', hfHome === null ? null : join(expandPath(hfHome, env, home), 'token')) ??
    fromFile('default', defaultPath) ?? { token: null, place: null, where: null, attempts }
  );
}

/**
 * One line naming every place {@link resolveHubToken} looked and what it found, for a "token missing"
 * error, e.g. `HF_TOKEN (unset), HF_TOKEN_PATH (unset), $HF_HOME/token (HF_HOME unset),
 * /home/me/.cache/huggingface/token (no such file)`.
 * Holds paths and outcomes only, never a token.
 */
export function describeHubTokenSearch(resolved: ResolvedHubToken): string {
  const words: Record<HubTokenAttempt['outcome'], string> = {
    found: 'found',
    unset: 'unset',
    empty: 'empty',
    missing: 'no such file',
    unreadable: 'unreadable',
  };
  return resolved.attempts
    .map((a) => {
      if (a.place === 'HF_TOKEN') return `${a.where} (${words[a.outcome]})`;
      if (a.where === null) return a.place === 'HF_HOME' ? '$HF_HOME/token (HF_HOME unset)' : `${a.place} (unset)`;
      const label = a.place === 'HF_TOKEN_PATH' ? `HF_TOKEN_PATH=${a.where}` : a.where;
      return `${label} (${words[a.outcome]}${a.error ? `: ${a.error}` : ''})`;
    })
    .join(', ');
}
