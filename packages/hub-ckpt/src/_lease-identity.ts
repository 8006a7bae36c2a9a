// Who holds a lease, in terms that survive a preempted VM, a restarted container and a pid namespace:
// a hostname alone names a new VM or container the same as the old one, and a pid alone names whatever
// process holds that number now. Only on the same boot, hostname AND pid namespace does a pid name one
// process, and only with its start time is it the same process.
import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { readProcStat } from './proc-stat';

/** Where a lease holder runs: its host and the process that holds it. */
export interface HolderIdentity {
  host: string;
  /** /proc/sys/kernel/random/boot_id: a new one per boot (a preempted VM's successor has another). */
  boot_id: string | null;
  /** `readlink /proc/self/ns/pid`, e.g. `pid:[4026531836]`: a container has its own. */
  pidns: string | null;
  pid: number;
  /** The holder's start time (field 22 of /proc/<pid>/stat, clock ticks since boot). */
  start: string | null;
}

function readOrNull(read: () => string): string | null {
  try {
    return read().trim() || null;
  } catch {
    return null;
  }
}

/** A process's start time (field 22 of /proc/<pid>/stat), or null when unknown (no /proc, no such pid). */
export function processStart(pid: number): string | null {
  const stat = readProcStat(pid);
  return stat === null ? null : String(stat.startTicks);
}

/** This process's identity (`host` and `pid` as given: tests and callers may name another). */
export function identityHere(p: { host?: string; pid?: number } = {}): HolderIdentity {
  const pid = p.pid ?? process.pid;
  return {
    host: p.host ?? hostname(),
    boot_id: readOrNull(() => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8')),
    pidns: readOrNull(() => readlinkSync('/proc/self/ns/pid')),
    pid,
    start: processStart(pid),
  };
}

/** What is known of a lease's holder from here. */
export type HolderVerdict =
  | { kind: 'gone'; why: string }
  | { kind: 'alive'; why: string }
  | { kind: 'unknown'; why: string };

/**
 * Whether `pid` names a running process here: `dead` (no such process), `zombie` (exited, not yet reaped by its
 * parent: it no longer runs) or `alive` (also when only `kill(pid, 0)` can tell: no /proc).
 */
export function processLiveness(pid: number): 'dead' | 'zombie' | 'alive' {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return 'dead';
  }
  const state = readProcStat(pid)?.state;
  return state === 'Z' || state === 'X' ? 'zombie' : 'alive';
}

/**
 * Judges a lease's holder. Only on the same host (same boot_id AND hostname AND pid namespace) is its pid
 * evidence: dead, a zombie, or alive with another start time means the holder is gone; alive with its
 * start time (or none recorded) means it lives. Anywhere else, or for a record that lacks these fields
 * (an older soup), nothing here can tell: unknown.
 */
export function judgeHolder(held: Partial<HolderIdentity>, here: HolderIdentity): HolderVerdict {
  if (typeof held.boot_id !== 'string' || typeof held.pidns !== 'string' || typeof held.pid !== 'number')
    return { kind: 'unknown', why: 'its lease names no boot id or pid namespace' };
  if (held.host !== here.host) return { kind: 'unknown', why: `it runs on another host (${held.host})` };
  if (held.boot_id !== here.boot_id) return { kind: 'unknown', why: 'its host has booted since (another boot id)' };
  if (held.pidns !== here.pidns) return { kind: 'unknown', why: `it runs in another pid namespace (${held.pidns})` };
  const state = processLiveness(held.pid);
  if (state === 'dead') return { kind: 'gone', why: `pid ${held.pid} is no longer running` };
  if (state === 'zombie') return { kind: 'gone', why: `pid ${held.pid} has exited` };
  const start = typeof held.start === 'string' ? held.start : null;
  const now = processStart(held.pid);
  if (start !== null && now !== null && now !== start)
    return { kind: 'gone', why: `pid ${held.pid} is now another process (started at ${now}, not ${start})` };
  return { kind: 'alive', why: `pid ${held.pid} still runs` };
}
