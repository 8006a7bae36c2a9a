// Processes still at work inside a folder: their working directory or an open file is in it. A trainer's `setsid`
// child outlives the session that started it and keeps writing; the next session must not start beside it.
import { readProcStat } from '@soup/hub-ckpt';
import { readdirSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';

/** One process at work inside the folder. */
export interface FolderWriter {
  pid: number;
  /** Its command name (/proc/<pid>/comm). */
  command: string;
  /** What ties it to the folder: `its working directory` or `<path> open`. */
  what: string;
}

/** This process and every ancestor: the shell that started soup may well sit in the output folder. */
function selfAndAncestors(): Set<number> {
  const out = new Set<number>([process.pid]);
  let pid = process.ppid;
  for (let i = 0; i < 64 && pid > 1 && !out.has(pid); i++) {
    out.add(pid);
    const stat = readProcStat(pid);
    if (stat === null) break;
    pid = stat.ppid;
  }
  return out;
}

/**
 * The processes (other than this one and its ancestors) whose working directory or an open file lies inside
 * `dir`, read from /proc (only those this user may read; none where there is no /proc).
 */
export function writersIn(dir: string): FolderWriter[] {
  let root: string;
  let pids: string[];
  try {
    root = realpathSync(dir);
    pids = readdirSync('/proc').filter((n) => /^\d+$/.test(n));
  } catch {
    return [];
  }
  const inside = (p: string): boolean => p === root || p.startsWith(`${root}/`);
  const skip = selfAndAncestors();
  const found: FolderWriter[] = [];
  for (const name of pids) {
    const pid = Number(name);
    if (skip.has(pid)) continue;
    let what: string | null = null;
    try {
      if (inside(readlinkSync(`/proc/${pid}/cwd`))) what = 'its working directory';
    } catch {
      // gone, a zombie, or not ours to read
    }
    if (what === null) {
      try {
        for (const fd of readdirSync(`/proc/${pid}/fd`)) {
          const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
          if (inside(target)) {
            what = `${target} open`;
            break;
          }
        }
      } catch {
        // gone meanwhile, or not ours to read
      }
    }
    if (what === null) continue;
    let command = '?';
    try {
      command = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
    } catch {
      // gone meanwhile
    }
    found.push({ pid, command, what });
  }
  return found;
}
