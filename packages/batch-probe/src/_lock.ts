import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, stat, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import { CacheLockError } from './errors';

interface LockInfo {
  pid: number;
  host: string;
  token: string;
  createdAt: string;
}

export interface LockOptions {
  timeoutMs: number;
  staleMs: number;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Runs `fn` while holding an exclusive lock file `lockPath` (created with O_CREAT|O_EXCL, i.e.
 * `wx`), shared by every process on the machine that writes the cache. A lock whose owner
 * process is gone (same host) or that is older than `staleMs` is broken; breaking takes a second
 * `.break` lock and re-checks the lock's token under it, so two waiters never both break, and
 * never break a lock taken after the stale one. Throws {@link CacheLockError} after `timeoutMs`.
 */
export async function withLock<T>(lockPath: string, options: LockOptions, fn: () => Promise<T>): Promise<T> {
  const token = await acquire(lockPath, options);
  try {
    return await fn();
  } finally {
    await release(lockPath, token);
  }
}

async function acquire(lockPath: string, { timeoutMs, staleMs }: LockOptions): Promise<string> {
  await mkdir(dirname(lockPath), { recursive: true, mode: 0o700 });
  const token = randomBytes(12).toString('hex');
  const body = JSON.stringify({
    pid: process.pid,
    host: hostname(),
    token,
    createdAt: new Date().toISOString(),
  } satisfies LockInfo);
  const t0 = Date.now();
  let delayMs = 1;
  for (;;) {
    if (await tryCreate(lockPath, body)) return token;
    const seen = await inspect(lockPath);
    if (seen && isStale(seen, staleMs)) {
      await breakStale(lockPath, seen.info?.token, seen.mtimeMs, staleMs);
      continue;
    }
    if (Date.now() - t0 >= timeoutMs) throw new CacheLockError(lockPath, Date.now() - t0);
    await sleep(delayMs + Math.random() * delayMs);
    delayMs = Math.min(delayMs * 2, 25);
  }
}

/** Creates the lock file exclusively; false when it already exists. Other errors propagate. */
async function tryCreate(lockPath: string, body: string): Promise<boolean> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(lockPath, 'wx', 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
  try {
    await handle.writeFile(body, 'utf8');
  } finally {
    await handle.close();
  }
  return true;
}

interface Seen {
  info: LockInfo | undefined;
  mtimeMs: number;
}

/** The lock's owner (undefined while its owner is still writing it) and age; undefined when gone. */
async function inspect(lockPath: string): Promise<Seen | undefined> {
  try {
    const [st, text] = await Promise.all([stat(lockPath), readFile(lockPath, 'utf8')]);
    let info: LockInfo | undefined;
    try {
      const parsed = JSON.parse(text) as Partial<LockInfo>;
      if (typeof parsed.pid === 'number' && typeof parsed.host === 'string' && typeof parsed.token === 'string') {
        info = parsed as LockInfo;
      }
    } catch {
      info = undefined;
    }
    return { info, mtimeMs: st.mtimeMs };
  } catch {
    return undefined;
  }
}

function isStale(seen: Seen, staleMs: number): boolean {
  if (Date.now() - seen.mtimeMs > staleMs) return true;
  if (seen.info && seen.info.host === hostname() && !isAlive(seen.info.pid)) return true;
  return false;
}

function isAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'; // exists, owned by someone else
  }
}

/**
 * Removes the stale lock whose token (or, for a lock without one, mtime) was seen, under the
 * `.break` lock so that only one waiter breaks it and a fresh lock taken meanwhile survives.
 */
async function breakStale(
  lockPath: string,
  token: string | undefined,
  mtimeMs: number,
  staleMs: number,
): Promise<void> {
  const breakPath = `${lockPath}.break`;
  if (!(await tryCreate(breakPath, String(process.pid)))) {
    // Another waiter is breaking. A `.break` lock left by a crash in this tiny window goes by age.
    const st = await stat(breakPath).catch(() => undefined);
    if (st && Date.now() - st.mtimeMs > staleMs) await unlink(breakPath).catch(() => undefined);
    else await sleep(1);
    return;
  }
  try {
    const again = await inspect(lockPath);
    const same =
      again !== undefined &&
      (token !== undefined ? again.info?.token === token : again.info === undefined && again.mtimeMs === mtimeMs);
    if (same) await unlink(lockPath).catch(() => undefined);
  } finally {
    await unlink(breakPath).catch(() => undefined);
  }
}

/** Removes the lock only if it is still ours (it may have been broken as stale meanwhile). */
async function release(lockPath: string, token: string): Promise<void> {
  const seen = await inspect(lockPath);
  if (seen?.info?.token === token) await unlink(lockPath).catch(() => undefined);
}
