// What an --exec command names on disk: every argv entry (or the value of a `--flag=value`
// entry) that is an existing regular file, with a short content hash, and the sources it may import
// (trainer-sources). These go into the cache key's base, so an edited or different trainer run with
// the same command text gets its own answer, and into the provenance side file, so a lookup can say
// the trainer changed and `soup cache ls --json` lists what an answer rests on.
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { splitCommand } from '@soup/cuda-probe';
import { redactArgv } from '@soup/hub-ckpt';
import { trainerSources } from './trainer-sources';

/** Files larger than this (an interpreter binary, a dataset) are named by size only, not read. */
const MAX_HASHED_BYTES = 64 * 2 ** 20;

/**
 * `{argument: hash}` for every argv entry that is an existing file; the hash is 12 hex of sha256 (`size:N` for a file
 * over 64 MiB).
 */
export function trainerFileHashes(argv: readonly string[], cwd: string): Record<string, string> {
  return namedFiles(argv, cwd).hashes;
}

/** The files an argv names: `{argument: hash}`, and their absolute paths. */
function namedFiles(argv: readonly string[], cwd: string): { hashes: Record<string, string>; paths: string[] } {
  const hashes: Record<string, string> = {};
  const paths: string[] = [];
  argv.forEach((arg, i) => {
    if (arg.includes('{batch_size}')) return;
    // A bare program name is looked up on PATH, not in the working directory.
    if (i === 0 && !arg.includes('/')) return;
    const eq = arg.startsWith('-') ? arg.indexOf('=') : -1;
    const candidate = eq >= 0 ? arg.slice(eq + 1) : arg;
    if (candidate === '') return;
    const full = isAbsolute(candidate) ? candidate : resolve(cwd, candidate);
    let size: number;
    try {
      const st = statSync(full);
      if (!st.isFile()) return;
      size = st.size;
    } catch {
      return;
    }
    try {
      hashes[candidate] =
        size > MAX_HASHED_BYTES
          ? `size:${size}`
          : createHash('sha256').update(readFileSync(full)).digest('hex').slice(0, 12);
      paths.push(full);
    } catch {
      // unreadable: the trial will say so
    }
  });
  return { hashes, paths };
}

/**
 * The command text fit to store (`sha256`, the default) or to show (`mask`): unchanged unless it holds a key, token,
 * secret or password (see `redactArgv`); then its arguments re-joined with each such value as `sha256:<hex>` (a
 * changed key is still a changed command) or `***`.
 */
export function redactCommand(command: string, as: 'sha256' | 'mask' = 'sha256'): string {
  const argv = splitCommand(command);
  const redacted = redactArgv(argv, { as });
  if (redacted.every((a, i) => a === argv[i])) return command;
  return redacted.map((a) => (a === '' || /[\s"'\\]/.test(a) ? JSON.stringify(a) : a)).join(' ');
}

/**
 * The cache base of an --exec command: the command text (a key in it kept as its sha256), then `files:` and each
 * named file's hash, then `src:` with the count and digest of the sources it may import (see trainerSources).
 */
export function execBase(
  command: string,
  files: Record<string, string>,
  sources: { count: number; digest: string } | null = null,
): string {
  const list = Object.entries(files).map(([name, hash]) => `${name}@${hash}`);
  const shown = redactCommand(command);
  const src = sources === null ? '' : ` src:${sources.count}@${sources.digest}`;
  return `${list.length === 0 ? `exec:${shown}` : `exec:${shown} files:${list.join(',')}`}${src}`;
}

/** A trainer command's batch-cache base and what it rests on. */
export interface TrainerCacheBase {
  base: string;
  /** Every hashed file: those the command names (by their argument) and the sources it may import (by path). */
  files: Record<string, string>;
  /** Why the trainer's sources are unknown (then nothing may be cached); null when listed. */
  unknown: string | null;
}

/**
 * The batch-cache base of a trainer's trial command: `base` when given, else the command text, the hash of every
 * file it names and the digest of the sources it may import. One rule for `soup probe --exec`, `soup run --probe`
 * and `--try`, so each finds the others' answers, and an edit in an imported module is a new key.
 */
export function trainerCacheBase(
  command: string,
  o: { cwd: string; env?: NodeJS.ProcessEnv | undefined; base?: string | undefined },
): TrainerCacheBase {
  const argv = splitCommand(command);
  const named = namedFiles(argv, o.cwd);
  const src = trainerSources(argv, { cwd: o.cwd, env: o.env ?? process.env, named: named.paths });
  const files = { ...src.files, ...named.hashes };
  const sources = src.digest === null ? null : { count: Object.keys(src.files).length, digest: src.digest };
  return {
    base: o.base ?? execBase(command, named.hashes, sources),
    files,
    unknown: o.base !== undefined ? null : src.unknown,
  };
}

/** Which files differ between a cached answer's hashes and today's, as `name (old → new)`. */
export function changedFiles(before: Record<string, string>, now: Record<string, string>): string[] {
  const names = new Set([...Object.keys(before), ...Object.keys(now)]);
  return [...names]
    .filter((n) => before[n] !== now[n])
    .map((n) => `${n} (${before[n] ?? 'absent'} → ${now[n] ?? 'absent'})`);
}
