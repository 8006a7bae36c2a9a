// The process tree of a trial, from Linux /proc.
import { readProcStat } from '@soup/hub-ckpt/proc-stat';
import { readdirSync } from 'node:fs';

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
    const stat = readProcStat(Number(n));
    if (stat === null) continue; // gone
    parent.set(stat.pid, stat.ppid);
    if (stat.pgrp === root || stat.session === root) out.add(stat.pid);
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
