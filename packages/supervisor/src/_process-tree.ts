// The processes a trainer started, read from /proc (Linux; elsewhere none are found and only its group is signalled):
// its process group, the descendants that left the group (setsid) while the trainer was there to parent them, and
// any process still carrying the tag soup put in the trainer's environment (a setsid child re-parented to init
// before a scan saw it: the environment is inherited, the parent is not).
import { type ProcStat, readProcStat } from '@soup/hub-ckpt';
import { readdirSync, readFileSync } from 'node:fs';

/** One process: its pid, its start time (clock ticks since boot: a reused pid has another) and its command line. */
export interface TreeProcess {
  pid: number;
  startTicks: number;
  command: string;
}

function allStats(): ProcStat[] {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return [];
  }
  const out: ProcStat[] = [];
  for (const n of names) {
    if (!/^\d+$/.test(n)) continue;
    const s = readProcStat(Number(n));
    if (s !== null && s.state !== 'Z') out.push(s);
  }
  return out;
}

/** A process's command line as a person reads it (`sleep 1000`); its name when the command line is empty. */
export function commandOf(pid: number): string {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
      .split('\0')
      .filter((a) => a !== '');
    if (argv.length > 0) return argv.join(' ').slice(0, 200);
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '?';
  }
}

/** Whether `p` is still the same running process (not gone, not a reused pid, not a zombie waiting for its parent). */
export function stillRunning(p: Pick<TreeProcess, 'pid' | 'startTicks'>): boolean {
  const s = readProcStat(p.pid);
  return s !== null && s.startTicks === p.startTicks && s.state !== 'Z';
}

/**
 * The processes under `rootPid` now (its descendants, whatever their group) plus every member of its process group
 * `pgid`; `rootPid` itself is left out.
 */
export function treeOf(rootPid: number, pgid: number): TreeProcess[] {
  const stats = allStats();
  const children = new Map<number, ProcStat[]>();
  for (const s of stats) children.set(s.ppid, [...(children.get(s.ppid) ?? []), s]);
  const found = new Map<number, ProcStat>();
  const walk = (pid: number): void => {
    for (const c of children.get(pid) ?? []) {
      if (found.has(c.pid)) continue;
      found.set(c.pid, c);
      walk(c.pid);
    }
  };
  walk(rootPid);
  for (const s of stats) if (s.pgrp === pgid && s.pid !== rootPid && !found.has(s.pid)) found.set(s.pid, s);
  // Descendants of group members that left the group after the root was gone.
  for (const s of [...found.values()]) walk(s.pid);
  found.delete(rootPid);
  return [...found.values()].map((s) => ({ pid: s.pid, startTicks: s.startTicks, command: commandOf(s.pid) }));
}

/** The environment variable soup tags a trainer's tree with (`<name>=<random id>`, inherited by its descendants). */
export const TREE_TAG_VAR = 'SOUP_TRAINER_TREE';

/** The running processes whose environment holds `SOUP_TRAINER_TREE=<tag>`. */
export function taggedWith(tag: string): TreeProcess[] {
  const needle = `\0${TREE_TAG_VAR}=${tag}\0`;
  const out: TreeProcess[] = [];
  for (const s of allStats()) {
    try {
      if (!`\0${readFileSync(`/proc/${s.pid}/environ`, 'latin1')}`.includes(needle)) continue;
    } catch {
      continue; // gone, or not ours to read
    }
    out.push({ pid: s.pid, startTicks: s.startTicks, command: commandOf(s.pid) });
  }
  return out;
}

/** A process soup ended. */
export type EndedProcess = TreeProcess;

/**
 * Ends what is left of a trainer's tree: the members of its process group `pgid` and their descendants, and the
 * processes in `seen` (found while the trainer ran) that still run. SIGTERM first, SIGKILL to those left after
 * `killAfterMs`. Resolves with the processes it signalled.
 */
export async function endTree(p: {
  pgid: number;
  seen: readonly TreeProcess[];
  killAfterMs: number;
  /** The tag of the trainer's environment ({@link TREE_TAG_VAR}). @default none */
  tag?: string;
}): Promise<EndedProcess[]> {
  const targets = new Map<string, TreeProcess>();
  const key = (t: TreeProcess): string => `${t.pid}:${t.startTicks}`;
  for (const t of treeOf(p.pgid, p.pgid)) targets.set(key(t), t);
  if (p.tag !== undefined) for (const t of taggedWith(p.tag)) targets.set(key(t), t);
  for (const t of p.seen) {
    if (!stillRunning(t)) continue;
    targets.set(key(t), t);
    for (const d of treeOf(t.pid, -1)) targets.set(key(d), d);
  }
  const left = [...targets.values()].filter((t) => t.pid !== process.pid);
  if (left.length === 0) return [];
  const send = (t: TreeProcess, sig: NodeJS.Signals): void => {
    try {
      if (stillRunning(t)) process.kill(t.pid, sig);
    } catch {
      // gone, or not ours to signal
    }
  };
  for (const t of left) send(t, 'SIGTERM');
  const until = Date.now() + p.killAfterMs;
  while (Date.now() < until && left.some(stillRunning)) await new Promise((r) => setTimeout(r, 50));
  for (const t of left) send(t, 'SIGKILL');
  return left;
}
