// The one reader of Linux /proc/<pid>/stat for every package that judges a process (a lease holder, a lock holder,
// a trainer's tree, a trial's tree). Field 2, the command name, is in parentheses and is whatever the program's
// file was called: it may hold spaces and ')' itself, so the fields after it are counted from the LAST ')'.
import { readFileSync } from 'node:fs';

/** The fields of /proc/<pid>/stat that soup reads. */
export interface ProcStat {
  /** Field 1. */
  pid: number;
  /** Field 2, without its parentheses (the kernel's `comm`: at most 15 bytes of the program's name). */
  comm: string;
  /** Field 3, one letter: R, S, D, T, Z (a zombie: exited, its parent has not reaped it yet), X (dead), … */
  state: string;
  /** Field 4: the parent's pid. */
  ppid: number;
  /** Field 5: the process group. */
  pgrp: number;
  /** Field 6: the session. */
  session: number;
  /** Field 22: the start time in clock ticks since boot (a reused pid has another). */
  startTicks: number;
}

/** Parses the text of a /proc/<pid>/stat file, or null when it does not have that shape. */
export function parseProcStat(text: string): ProcStat | null {
  const open = text.indexOf(' (');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return null;
  const rest = text.slice(close + 2).split(' ');
  const [pid, ppid, pgrp, session, startTicks] = [text.slice(0, open), rest[1], rest[2], rest[3], rest[19]].map((f) =>
    f !== undefined && /^-?\d+$/.test(f) ? Number(f) : Number.NaN,
  ) as [number, number, number, number, number];
  const state = rest[0] ?? '';
  if (!/^[A-Za-z]$/.test(state) || [pid, ppid, pgrp, session, startTicks].some(Number.isNaN)) return null;
  return { pid, comm: text.slice(open + 2, close), state, ppid, pgrp, session, startTicks };
}

/** /proc/<pid>/stat of a process (`self` for this one), or null when it cannot be read (gone, no /proc). */
export function readProcStat(pid: number | 'self'): ProcStat | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  return parseProcStat(text);
}
