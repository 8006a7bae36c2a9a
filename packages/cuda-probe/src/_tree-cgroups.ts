// What a supervised trainer's process tree is, followed while it runs: every pid seen in it (the
// kernel log names the process it killed, often a launcher's rank or a wrapper's child, not the
// leader), and the memory cgroups its processes ran in, with each one's oom_kill count when first
// seen (a trainer in a cgroup of its own, made by soup or by whoever started it).
import { existsSync, readFileSync } from 'node:fs';
import { memoryCgroupSupport, parseCgroupMounts, parseProcCgroup, readMemoryCgroupCounters } from './_memory-cgroup';
import { treePids } from './_tree-pids';
import { join, posix } from 'node:path';

/** A memory cgroup a process of the tree ran in, and its oom_kill count when first seen. */
export interface SeenCgroup {
  dir: string;
  version: 1 | 2;
  oomKillsAtFirstSight: number;
}

/** Follows one tree until {@link TreeFollower.stop}. */
export interface TreeFollower {
  /** Reads the tree now (also called on every tick). */
  sample(): void;
  stop(): void;
  readonly pids: ReadonlySet<number>;
  readonly cgroups: ReadonlyMap<string, SeenCgroup>;
}

/** The memory cgroup directory of `pid` (v1 `memory` line, else v2), or null. */
function memoryCgroupOf(
  pid: number,
  mounts: ReturnType<typeof parseCgroupMounts>,
): { dir: string; version: 1 | 2 } | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/cgroup`, 'utf8');
  } catch {
    return null;
  }
  const lines = parseProcCgroup(text);
  const v1 = lines.find((l) => l.controllers.includes('memory'));
  const line = v1 ?? lines.find((l) => l.hierarchyId === '0');
  const mount = mounts.find((m) =>
    v1 ? m.fsType === 'cgroup' && m.superOptions.includes('memory') : m.fsType === 'cgroup2',
  );
  if (!line || !mount) return null;
  const rel = posix.relative(mount.root, line.path);
  if (rel.startsWith('..')) return null;
  return { dir: join(mount.mountPoint, rel), version: v1 ? 1 : 2 };
}

export function followTree(root: number, everyMs = 250): TreeFollower {
  const pids = new Set<number>([root]);
  const cgroups = new Map<string, SeenCgroup>();
  const own = memoryCgroupSupport();
  const ownDir = own.available ? own.parentDir : null;
  let mounts: ReturnType<typeof parseCgroupMounts> = [];
  try {
    mounts = parseCgroupMounts(readFileSync('/proc/self/mountinfo', 'utf8'));
  } catch {
    // no cgroups to follow
  }
  let timer: ReturnType<typeof setInterval> | undefined;
  const sample = (): void => {
    const now = treePids(root);
    // The whole tree is gone (a trainer that exited 0 is never judged): nothing more to follow.
    if (now.size === 1 && !existsSync(`/proc/${root}`)) clearInterval(timer);
    for (const p of now) {
      pids.add(p);
      const cg = memoryCgroupOf(p, mounts);
      // soup's own cgroup counts every job beside the trainer: only a cgroup of the trainer's own is evidence.
      if (!cg || cg.dir === ownDir || cgroups.has(cg.dir)) continue;
      const oom = readMemoryCgroupCounters(cg.dir, cg.version).oomKills;
      if (oom !== null) cgroups.set(cg.dir, { ...cg, oomKillsAtFirstSight: oom });
    }
  };
  sample();
  timer = setInterval(sample, everyMs);
  timer.unref();
  return { sample, stop: () => clearInterval(timer), pids, cgroups };
}
