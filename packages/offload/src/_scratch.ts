import { randomBytes } from 'node:crypto';
import { lstatSync, readdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { isLiveToken } from './_registry';

/** Every scratch file name starts with this. */
export const SCRATCH_PREFIX = 'soup-act-';
/** `soup-act-<pid>-<token>-<seq>.bin`: the owner's pid, an 8-hex store token, a per-store sequence number. */
const SCRATCH_NAME = /^soup-act-(\d+)-([0-9a-f]{8})-(\d+)\.bin$/;

/** A fresh random store token. */
export function newToken(): string {
  return randomBytes(4).toString('hex');
}

/** The file-name prefix of one store: `soup-act-<pid>-<token>-`. */
export function storePrefix(token: string): string {
  return `${SCRATCH_PREFIX}${process.pid}-${token}-`;
}

/** Whether a process id is alive (EPERM means it exists but is not ours: alive). */
export function isPidAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return true; // not a pid we can judge: leave its files alone
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/**
 * Deletes scratch files in `dir` (top level only, regular files only) whose name matches the
 * store naming scheme and whose owner is gone: another pid that is no longer alive, or this
 * pid with a token no open store holds. Files of live stores and any other file are left alone.
 * Returns the names removed.
 */
export function sweepDir(dir: string): string[] {
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return removed;
  }
  for (const name of names) {
    const m = SCRATCH_NAME.exec(name);
    if (!m) continue;
    const pid = Number(m[1]);
    const token = m[2]!;
    const stale = pid === process.pid ? !isLiveToken(token) : !isPidAlive(pid);
    if (!stale) continue;
    const path = join(dir, name);
    try {
      if (!lstatSync(path).isFile()) continue;
      unlinkSync(path);
      removed.push(name);
    } catch {
      // raced with another sweeper or the owner: fine
    }
  }
  return removed;
}
