// Where a train-step probe keeps its prepared model between trials: a temp dir removed when the process exits, and
// otherwise by the next probe on the machine once its owner is gone. A SIGKILL (the kernel's OOM killer, a test
// runner's worker ending) runs no exit handler, and the model is as large as the model's weights.
import { readProcStat } from '@soup/hub-ckpt/proc-stat';
import { mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const PREFIX = 'soup-probe-';
// soup-probe-<pid>-<start time in clock ticks>-<pid namespace inode>-<random>
const OWNED = /^soup-probe-(\d+)-(\d+)-(\d+)-[^-]+$/;

/** A process's start time (clock ticks since boot), or null when it does not exist. */
function startTicks(pid: number | 'self'): string | null {
  const stat = readProcStat(pid);
  return stat === null ? null : String(stat.startTicks);
}

function pidNamespace(): string | null {
  try {
    return /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))?.[1] ?? null;
  } catch {
    return null;
  }
}

/**
 * Removes the probe dirs under `root` whose owner is gone: the pid is not running, or runs a process started at
 * another time. Only dirs named by a process of this pid namespace are judged (another's pids mean other processes);
 * a dir named the old way, without its owner, is left alone. Returns the dirs removed.
 */
export function sweepProbeTempDirs(root: string = tmpdir()): string[] {
  const ns = pidNamespace();
  if (ns === null) return [];
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return [];
  }
  for (const name of names) {
    const m = OWNED.exec(name);
    if (!m || m[3] !== ns) continue;
    if (startTicks(Number(m[1])) === m[2]) continue;
    rmSync(join(root, name), { recursive: true, force: true });
    removed.push(name);
  }
  return removed;
}

// This process's dirs, removed at its exit; the first one also sweeps what earlier owners left. `owner` is this
// process's part of their names, read once.
const mine = new Set<string>();
let owner: string | null = null;

/** A new temp dir for one probe's prepared model, named for this process so that a later probe can sweep it. */
export function probeTempDir(root: string = tmpdir()): string {
  if (owner === null) {
    const ns = pidNamespace();
    const start = startTicks('self');
    owner = ns !== null && start !== null ? `${process.pid}-${start}-${ns}-` : '';
    sweepProbeTempDirs(root);
    process.once('exit', () => {
      for (const d of mine) rmSync(d, { recursive: true, force: true });
    });
  }
  const dir = mkdtempSync(join(root, `${PREFIX}${owner}`));
  mine.add(dir);
  return dir;
}
