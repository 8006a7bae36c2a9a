// One supervisor per output folder: `<output_dir>/.soup-run.lock` holds the supervisor's and the trainer's
// identity (host, boot id, pid namespace, pid and start time, as the store's lease records it); a second
// supervisor is refused while either still lives, and while any process still writes into the folder.
import { identityHere, processLiveness, processStart } from '@soup/hub-ckpt';
import {
  closeSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { OutputLockedError } from './errors';
import { writersIn } from './_folder-writers';

/** The lock file's name inside the output folder. */
export const LOCK_NAME = '.soup-run.lock';

/** What the lock file holds. */
export interface LockRecord {
  format: 'soup-run-lock/1';
  host: string;
  /** /proc/sys/kernel/random/boot_id and the pid namespace: with both equal here, a pid names one process. */
  boot_id?: string | null;
  pidns?: string | null;
  /** The supervisor. */
  pid: number;
  /** Its start time, as /proc/<pid>/stat counts it (clock ticks since boot), or null off Linux. */
  start: string | null;
  /** The trainer, once launched. */
  trainer_pid: number | null;
  trainer_start: string | null;
  started_at: string;
}

/** Whether `pid` lives and is the same process (same start time when one was recorded). */
export function sameProcessAlive(pid: number | null, start: string | null): boolean {
  if (pid === null || !Number.isInteger(pid) || pid <= 0) return false;
  // A zombie (exited, not yet reaped: its parent died first and nobody waits for it) is no longer running.
  if (processLiveness(pid) !== 'alive') return false;
  if (start === null) return true;
  const now = processStart(pid);
  return now === null || now === start;
}

/** A held lock. */
export interface OutputLock {
  readonly path: string;
  /** Records the trainer's pid (and start time). */
  setTrainer(pid: number): void;
  release(): void;
}

/** How often a holder refreshes its lock's mtime, and how old a refresh makes a holder that cannot be judged dead. */
export const LOCK_REFRESH_MS = 10_000;
export const LOCK_STALE_MS = 30_000;

/**
 * Who of an existing lock's holders still lives, or null. With the same boot id and pid namespace (any hostname:
 * another UTS namespace, a renamed host) the pids are judged with their start times. A holder on another boot or
 * in another pid namespace (a restarted container, another machine sharing the folder) cannot be judged from
 * here: it counts as live while it refreshed its lock within {@link LOCK_STALE_MS}. A record without these fields
 * (an older soup) is judged by its pids on the same hostname only.
 */
function liveHolder(old: LockRecord, path: string): { pid: number; what: string } | null {
  const here = identityHere();
  const judged = typeof old.boot_id === 'string' && typeof old.pidns === 'string';
  const samePids = judged ? old.boot_id === here.boot_id && old.pidns === here.pidns : old.host === here.host;
  if (samePids) {
    if (sameProcessAlive(old.trainer_pid, old.trainer_start))
      return { pid: old.trainer_pid!, what: `its trainer (pid ${old.trainer_pid})` };
    if (sameProcessAlive(old.pid, old.start)) return { pid: old.pid, what: `soup run (pid ${old.pid})` };
    return null;
  }
  if (!judged) return null;
  let ageMs = Number.POSITIVE_INFINITY;
  try {
    ageMs = Date.now() - statSync(path).mtimeMs;
  } catch {
    return null;
  }
  if (ageMs >= LOCK_STALE_MS) return null;
  const where = old.boot_id !== here.boot_id ? 'another boot or machine' : `another pid namespace (${old.pidns})`;
  return {
    pid: old.pid,
    what:
      `soup run (pid ${old.pid} in ${where}, host ${old.host}) refreshed its lock ${Math.round(ageMs / 1000)} s ` +
      `ago (stale after ${LOCK_STALE_MS / 1000} s)`,
  };
}

/**
 * Takes the output folder's lock. Refused (OutputLockedError naming the pid) while a process other than this
 * one and its ancestors has its working directory or an open file inside `dir` (a trainer's `setsid` child left
 * writing there), or while the lock's supervisor or trainer still lives (see {@link liveHolder}); a dead one
 * is taken over (`onStale`). The holder refreshes the lock's mtime every {@link LOCK_REFRESH_MS}.
 */
export function acquireOutputLock(p: { dir: string; onStale?: (rec: LockRecord) => void }): OutputLock {
  mkdirSync(p.dir, { recursive: true });
  const path = join(p.dir, LOCK_NAME);
  const writer = writersIn(p.dir)[0];
  if (writer !== undefined) {
    throw new OutputLockedError(
      `${p.dir} is in use: pid ${writer.pid} (${writer.command}) has ${writer.what} inside it. Two writers in one ` +
        `folder delete each other's checkpoints: wait for it to end, or stop it (kill ${writer.pid}), then run again.`,
      { lockPath: path, pid: writer.pid },
    );
  }
  const me = identityHere();
  const rec: LockRecord = {
    format: 'soup-run-lock/1',
    host: me.host,
    boot_id: me.boot_id,
    pidns: me.pidns,
    pid: process.pid,
    start: me.start,
    trainer_pid: null,
    trainer_start: null,
    started_at: new Date().toISOString(),
  };
  for (let attempt = 0; attempt < 3; attempt++) {
    let fd: number;
    try {
      fd = openSync(path, 'wx');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      let old: LockRecord | null = null;
      try {
        old = JSON.parse(readFileSync(path, 'utf8')) as LockRecord;
      } catch {
        old = null;
      }
      const who = old === null ? null : liveHolder(old, path);
      if (old !== null && who !== null) {
        throw new OutputLockedError(
          `${p.dir} is in use by an earlier soup run started ${old.started_at}: ${who.what} still lives (lock ` +
            `${path}). ` +
            `Two trainers in one folder delete each other's checkpoints: wait for it to end, or stop it (kill ` +
            `${who.pid}), then run again.`,
          { lockPath: path, pid: who.pid },
        );
      }
      if (old !== null) p.onStale?.(old);
      rmSync(path, { force: true });
      continue;
    }
    writeSync(fd, `${JSON.stringify(rec)}\n`);
    closeSync(fd);
    let held = true;
    // Evidence of life for a session that cannot judge this process (another pid namespace or boot).
    const refresh = setInterval(() => {
      const now = new Date();
      try {
        utimesSync(path, now, now);
      } catch {
        // released or removed meanwhile
      }
    }, LOCK_REFRESH_MS);
    refresh.unref();
    return {
      path,
      setTrainer(pid) {
        rec.trainer_pid = pid;
        rec.trainer_start = processStart(pid);
        if (held) writeFileSync(path, `${JSON.stringify(rec)}\n`);
      },
      release() {
        if (!held) return;
        held = false;
        clearInterval(refresh);
        rmSync(path, { force: true });
      },
    };
  }
  throw new OutputLockedError(`${path}: could not take the lock (another soup run keeps taking it)`, {
    lockPath: path,
    pid: 0,
  });
}
