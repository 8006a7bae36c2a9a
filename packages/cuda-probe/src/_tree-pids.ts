// The process tree of a trial, from Linux /proc.
import { readdirSync, readFileSync } from 'node:fs';

/**
 * The trial's whole process tree (Linux /proc): `root`, every process of its process group or of
 * its session (`root` leads both when it was spawned detached), and every descendant of those (by
 * parent pid), also one that started its own process group or session (a launcher's workers, a
 * data loader's daemon). The group and session keep a worker whose parent exited (re-parented to
 * init or a subreaper) in the tree.
 */
export function treePids(root: number): Set<number> {
  const out = new Set<number>([root]);
  let names: string[] = [];
  try {
    names = readdirSync('/proc');
  } catch {
    return out;
  }
  const parent = new Map<number, number>();
  for (const n of names) {
    if (!/^\d+$/.test(n)) continue;
    try {
      const stat = readFileSync(`/proc/${n}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const pid = Number(n);
      parent.set(pid, Number(fields[1]));
      if (Number(fields[2]) === root || Number(fields[3]) === root) out.add(pid);
    } catch {
      // gone
    }
  }
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, ppid] of parent) {
      if (!out.has(pid) && out.has(ppid)) {
        out.add(pid);
        grew = true;
      }
    }
  }
  return out;
}
