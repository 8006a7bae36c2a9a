import { lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { dirname, isAbsolute, join, parse, resolve, sep } from 'node:path';

const MAX_LINKS = 40;

/**
 * The real path of `path`, which need not exist: walks it one component at a time like the
 * kernel (and Python's `os.path.realpath`), following every symlink met, so `a/link/../b`
 * goes through the link's target, not lexically back to `a`. Components that do not exist are
 * kept as written. Returns `undefined` on a symlink loop.
 */
export function realPathOf(path: string, cwd: string): string | undefined {
  const absolute = isAbsolute(path) ? path : `${cwd}${sep}${path}`;
  const root = parse(resolve(absolute)).root;
  let pending = components(absolute.slice(parse(absolute).root.length));
  let current = root;
  let links = 0;
  while (pending.length > 0) {
    const part = pending.shift()!;
    if (part === '..') {
      current = dirname(current);
      continue;
    }
    const next = join(current, part);
    let isLink = false;
    try {
      isLink = lstatSync(next).isSymbolicLink();
    } catch {
      isLink = false; // missing (or unreadable): kept as written
    }
    if (!isLink) {
      current = next;
      continue;
    }
    links += 1;
    if (links > MAX_LINKS) return undefined;
    let target: string;
    try {
      target = readlinkSync(next);
    } catch {
      current = next;
      continue;
    }
    if (isAbsolute(target)) {
      current = parse(target).root;
      pending = [...components(target.slice(current.length)), ...pending];
    } else {
      pending = [...components(target), ...pending];
    }
  }
  return current;
}

/** The real path of a directory that should exist; itself (resolved) when it does not. */
export function realDirOf(dir: string): string {
  try {
    return realpathSync.native(dir);
  } catch {
    return resolve(dir);
  }
}

/** Whether `path` is `anchor` or lies below it (both real, absolute). */
export function isWithin(path: string, anchor: string): boolean {
  if (path === anchor) return true;
  const prefix = anchor.endsWith(sep) ? anchor : anchor + sep;
  return path.startsWith(prefix);
}

function components(path: string): string[] {
  return path.split(/[\\/]+/).filter((p) => p !== '' && p !== '.');
}
