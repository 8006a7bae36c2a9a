// One trial inside a memory cgroup of its own: the cgroup's hard limit caps the whole process tree
// (a launcher, its ranks, a wrapper's trainer), and its counters give the tree's peak and its
// out-of-memory kills at once. The launch is wrapped so that the child enters the cgroup before it
// execs the program: its first allocation is already charged.
import { join } from 'node:path';
import { findExecutable, type Launch } from './_launch';
import {
  createMemoryCgroup,
  memoryCgroupSupport,
  type MemoryCgroupCounters,
  readMemoryCgroupCounters,
  removeMemoryCgroup,
} from './_memory-cgroup';

// The shell only ever parses this fixed script: it moves itself into the cgroup, then execs the
// program with its arguments as they are.
const ENTER_SCRIPT = 'echo $$ > "$1" || exit 125; shift; exec "$@"';

/** `launch` run through /bin/sh, which enters the cgroup `dir` and execs it (same pid). */
export function enterCgroupLaunch(launch: Launch, sh: string, dir: string): Launch {
  return {
    ...launch,
    file: sh,
    args: ['-c', ENTER_SCRIPT, 'soup-cgroup', join(dir, 'cgroup.procs'), launch.file, ...launch.args],
  };
}

/** A trial's cgroup, made and not yet removed. */
export interface TrialCgroup {
  dir: string;
  version: 1 | 2;
  /** The limit the kernel applied. */
  limitBytes: number;
  /** `launch` entering this cgroup first. */
  wrap(launch: Launch): Launch;
  /** Reads the counters, then removes the cgroup (killing what is left in it). */
  finish(): MemoryCgroupCounters;
}

/** A cgroup for one trial with a hard limit, or why none can be made here (then the caller sums the tree's RSS). */
export function openTrialCgroup(limitBytes: number, prefix: string): TrialCgroup | { unavailable: string } {
  const sh = findExecutable('/bin/sh');
  if (!sh) return { unavailable: '/bin/sh is missing' };
  const support = memoryCgroupSupport();
  if (!support.available) return { unavailable: support.reason };
  let cg: ReturnType<typeof createMemoryCgroup>;
  try {
    cg = createMemoryCgroup(support, limitBytes, prefix);
  } catch (err) {
    return {
      unavailable: `cannot create a memory cgroup under ${support.parentDir} (${
        (err as NodeJS.ErrnoException).code ?? (err as Error).message
      })`,
    };
  }
  return {
    dir: cg.dir,
    version: cg.version,
    limitBytes: cg.limitBytes,
    wrap: (launch) => enterCgroupLaunch(launch, sh, cg.dir),
    finish() {
      const counters = readMemoryCgroupCounters(cg.dir, cg.version);
      removeMemoryCgroup(cg.dir);
      return counters;
    },
  };
}
