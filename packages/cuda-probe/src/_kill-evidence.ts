// Whether a trial that was killed (SIGKILL, or exit 137 through a wrapper) was killed for memory.
// A kill is out-of-memory only with evidence: the memory cgroup the trial ran in counted an
// oom_kill, the system's /proc/vmstat oom_kill counter rose while it ran, or its measured peak
// reached 90 % of the budget or of the memory that was free when it started. Anything else
// (a trainer that kills itself, a supervisor, `kill -9`) is "killed by signal N (not memory)".
// Where /dev/kmsg is readable, a vmstat rise counts only when the kernel log names one of the
// trial's own processes (other jobs on a shared machine get OOM-killed too).
import { closeSync, constants as fsConstants, openSync, readFileSync, readSync } from 'node:fs';
import { memoryCgroupSupport, readMemoryCgroupCounters } from './_memory-cgroup';

/** What is read before a trial starts, to compare with after it. */
export interface KillEvidenceBaseline {
  vmstatOomKills: number | null;
  cgroupOomKills: number | null;
  cgroupDir: string | null;
  cgroupVersion: 1 | 2 | null;
  /** MemAvailable of the host (CPU trials) when the trial started. */
  freeBytes: number | null;
}

/** A peak at or above this fraction of the budget (or of the free memory) is evidence of OOM. */
export const OOM_PEAK_FRACTION = 0.9;

function vmstatOomKills(): number | null {
  try {
    const m = /^oom_kill (\d+)$/m.exec(readFileSync('/proc/vmstat', 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/**
 * Pids the kernel's OOM killer named in its log (`/dev/kmsg`: "Killed process N", "oom-kill:…pid=N"),
 * or null when the log cannot be read (then a rise of /proc/vmstat oom_kill is taken as it is).
 */
export function oomKilledPidsInKernelLog(): Set<number> | null {
  let fd: number;
  try {
    fd = openSync('/dev/kmsg', fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
  } catch {
    return null;
  }
  const out = new Set<number>();
  const buf = Buffer.alloc(8192);
  try {
    for (let i = 0; i < 100_000; i++) {
      let n: number;
      try {
        n = readSync(fd, buf, 0, buf.length, null);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EPIPE') continue; // records overwritten while reading: go on
        break; // EAGAIN: the end of the log
      }
      const rec = buf.toString('utf8', 0, n);
      const killed = /Killed process (\d+)/.exec(rec) ?? /oom-kill:.*[,\s]pid=(\d+)/.exec(rec);
      if (killed) out.add(Number(killed[1]));
    }
  } finally {
    closeSync(fd);
  }
  return out;
}

function memAvailable(): number | null {
  try {
    const m = /^MemAvailable:\s+(\d+) kB$/m.exec(readFileSync('/proc/meminfo', 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

let ownCgroup: { dir: string; version: 1 | 2 } | null | undefined;
function ownMemoryCgroup(): { dir: string; version: 1 | 2 } | null {
  if (ownCgroup === undefined) {
    try {
      const s = memoryCgroupSupport();
      ownCgroup = s.available ? { dir: s.parentDir, version: s.version } : null;
    } catch {
      ownCgroup = null;
    }
  }
  return ownCgroup;
}

/** Reads the counters a kill is later compared with. `cgroupDir`: the trial's own memory cgroup, when it has one. */
export function killEvidenceBaseline(cgroup?: { dir: string; version: 1 | 2 }): KillEvidenceBaseline {
  const cg = cgroup ?? ownMemoryCgroup();
  let cgroupOomKills: number | null = null;
  if (cg) {
    try {
      cgroupOomKills = readMemoryCgroupCounters(cg.dir, cg.version).oomKills;
    } catch {
      cgroupOomKills = null;
    }
  }
  return {
    vmstatOomKills: vmstatOomKills(),
    cgroupOomKills,
    cgroupDir: cg?.dir ?? null,
    cgroupVersion: cg?.version ?? null,
    freeBytes: memAvailable(),
  };
}

/**
 * The evidence that a killed trial ran out of memory, as one phrase, or null when there is none.
 * @param peakBytes the trial's measured peak (RSS or GPU), when measured
 * @param budgetBytes the budget it was judged against, when there was one
 * @param freeBytes the memory free when the trial started (GPU free memory for GPU trials); defaults to the host's
 * MemAvailable in the baseline
 */
export function oomKillEvidence(
  base: KillEvidenceBaseline,
  m: {
    peakBytes: number | null;
    budgetBytes: number | null;
    freeBytes?: number | null /** The trial's processes (leader and those seen in its tree). */;
    pids?: ReadonlySet<number>;
  },
): string | null {
  if (base.cgroupDir !== null && base.cgroupVersion !== null && base.cgroupOomKills !== null) {
    try {
      const after = readMemoryCgroupCounters(base.cgroupDir, base.cgroupVersion).oomKills;
      if (after !== null && after > base.cgroupOomKills)
        return (
          `its memory cgroup counted ${after - base.cgroupOomKills} oom_kill event` +
          `${after - base.cgroupOomKills === 1 ? '' : 's'}`
        );
    } catch {
      // cgroup gone: no evidence from it
    }
  }
  if (base.vmstatOomKills !== null) {
    const after = vmstatOomKills();
    if (after !== null && after > base.vmstatOomKills) {
      // On a shared machine the OOM killer may have killed someone else's process: where the
      // kernel log is readable, one of the trial's own processes must be the one it named.
      const named = m.pids && m.pids.size > 0 ? oomKilledPidsInKernelLog() : null;
      const ours = named === null ? null : [...(m.pids ?? [])].find((p) => named.has(p));
      if (named === null)
        return `the kernel's OOM killer ran during the trial (/proc/vmstat oom_kill ${base.vmstatOomKills} → ${after})`;
      if (ours !== undefined)
        return (
          `the kernel's OOM killer killed its process ${ours} (/proc/vmstat oom_kill ${base.vmstatOomKills}` +
          ` → ${after}, named in the kernel log)`
        );
    }
  }
  const peak = m.peakBytes;
  if (peak !== null && m.budgetBytes !== null && peak >= OOM_PEAK_FRACTION * m.budgetBytes) {
    return `its peak reached ${Math.round((100 * peak) / m.budgetBytes)} % of the budget`;
  }
  const free = m.freeBytes ?? base.freeBytes;
  if (peak !== null && free !== null && free > 0 && peak >= OOM_PEAK_FRACTION * free) {
    return `its peak reached ${Math.round((100 * peak) / free)} % of the memory free when it started`;
  }
  return null;
}
