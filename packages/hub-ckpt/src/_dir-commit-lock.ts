// The directory store's commit lock: one writer at a time from the compare-and-swap check to the
// last rename, by exclusive create; a lock left by a dead process, or a stale one, is broken.
import { randomBytes } from 'node:crypto';
import { lstat, readFile, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { StoreError } from './errors';
import { TMP_PREFIX } from './_fs';

/** Held (exclusive create) from the compare-and-swap check to the last rename of a commit. */
const COMMIT_LOCK = `${TMP_PREFIX}commit.lock`;
const LOCK_WAIT_MS = 60_000;
const LOCK_STALE_MS = 10 * 60_000;

/** Takes the commit lock by exclusive create; a lock left by a dead process (or older than 10 min) is broken. */
export async function lockCommit(root: string): Promise<() => Promise<void>> {
  const path = join(root, COMMIT_LOCK);
  const mine = `${process.pid} ${randomBytes(6).toString('hex')}`;
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (let wait = 5; ; wait = Math.min(wait * 2, 200)) {
    try {
      await writeFile(path, mine, { flag: 'wx' });
      return async () => {
        const now = await readFile(path, 'utf8').catch(() => null);
        if (now === mine) await unlink(path).catch(() => undefined);
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const held = await readFile(path, 'utf8').catch(() => null);
    const st = await lstat(path).catch(() => null);
    if (held !== null && st !== null) {
      const pid = Number(held.split(' ')[0]);
      if (!pidAlive(pid) || Date.now() - st.mtimeMs > LOCK_STALE_MS) {
        // Break it only if it is still the same lock (another waiter may have broken and retaken it).
        if ((await readFile(path, 'utf8').catch(() => null)) === held) await unlink(path).catch(() => undefined);
        continue;
      }
    }
    if (Date.now() > deadline) {
      throw new StoreError(
        `directory store ${root}: another process (${held ?? 'unknown'}) has held ${COMMIT_LOCK} ` +
          `for over ${LOCK_WAIT_MS / 1000} s`,
      );
    }
    await new Promise((r) => setTimeout(r, wait));
  }
}

/** Whether a process with this id is alive (EPERM: alive, owned by someone else). */
export function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
