// One supervisor per output folder: `<output_dir>/.soup-run.lock` holds the supervisor's and the
// trainer's pid and start time; a second supervisor is refused while either still lives.
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { OutputLockedError } from './errors';

/** The lock file's name inside the output folder. */
export const LOCK_NAME = '.soup-run.lock';

/** What the lock file holds. */
export interface LockRecord {
  format: 'soup-run-lock/1';
  host: string;
  /** The supervisor. */
  pid: number;
  /** Its start time, as /proc/<pid>/stat counts it (clock ticks since boot), or null off Linux. */
  start: string | null;
  /** The trainer, once launched. */
  trainer_pid: number | null;
  trainer_start: string | null;
  started_at: string;
}

/** A process's start time (field 22 of /proc/<pid>/stat), or null when unknown. */
export function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/** Whether `pid` lives and is the same process (same start time when one was recorded). */
export function sameProcessAlive(pid: number | null, start: string | null): boolean {
  if (pid === null || !Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  // A zombie (exited, not yet reaped: its parent died first and nobody waits for it) is no longer running.
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    if (/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2))) return false;
  } catch {
    // no /proc: kill(0) is all there is
  }
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

/**
 * Takes the output folder's lock. A lock whose supervisor or trainer still lives (same pid and start
 * time, on this host) throws OutputLockedError naming it; a dead one is taken over (`onStale`).
 */
export function acquireOutputLock(p: { dir: string; onStale?: (rec: LockRecord) => void }): OutputLock {
  mkdirSync(p.dir, { recursive: true });
  const path = join(p.dir, LOCK_NAME);
  const rec: LockRecord = {
    format: 'soup-run-lock/1',
    host: hostname(),
    pid: process.pid,
    start: processStart(process.pid),
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
      if (old !== null && old.host === rec.host) {
        const who = sameProcessAlive(old.trainer_pid, old.trainer_start)
          ? { pid: old.trainer_pid!, what: `its trainer (pid ${old.trainer_pid})` }
          : sameProcessAlive(old.pid, old.start)
            ? { pid: old.pid, what: `soup run (pid ${old.pid})` }
            : null;
        if (who !== null) {
          throw new OutputLockedError(
            `${p.dir} is in use by an earlier soup run started ${old.started_at}: ${who.what} still lives (lock ` +
              `${path}). ` +
              `Two trainers in one folder delete each other's checkpoints: wait for it to end, or stop it (kill ` +
              `${who.pid}), then run again.`,
            { lockPath: path, pid: who.pid },
          );
        }
      }
      if (old !== null) p.onStale?.(old);
      rmSync(path, { force: true });
      continue;
    }
    writeSync(fd, `${JSON.stringify(rec)}\n`);
    closeSync(fd);
    let held = true;
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
        rmSync(path, { force: true });
      },
    };
  }
  throw new OutputLockedError(`${path}: could not take the lock (another soup run keeps taking it)`, {
    lockPath: path,
    pid: 0,
  });
}
