// The file side of a memory cgroup: find this process's own memory cgroup (v1 or v2), create a
// child under it with a hard limit, read its peak and out-of-memory counters, remove it.
// Linux only. Nothing here spawns: run-in-memory-cgroup.ts does that.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join, posix } from 'node:path';

/** Where this process's memory cgroup is, or why no child cgroup can be made under it. */
export type MemoryCgroupSupport =
  | { available: true; version: 1 | 2; parentDir: string }
  | { available: false; reason: string };

/** Counters of one memory cgroup, read after its child exited. */
export interface MemoryCgroupCounters {
  /**
   * Highest memory usage the cgroup saw (v1 `memory.max_usage_in_bytes`, v2 `memory.peak`), page cache included; null
   * when the kernel has no such file (v2 before 5.19).
   */
  peakBytes: number | null;
  /**
   * Times usage hit the limit (v1 `memory.failcnt` + `memory.memsw.failcnt`, v2 `memory.events` `max`); a hit that
   * reclaim satisfied counts too.
   */
  limitHits: number | null;
  /**
   * Processes the kernel's OOM killer killed in the cgroup (v1 `memory.oom_control` `oom_kill`, v2 `memory.events`
   * `oom_kill`).
   */
  oomKills: number | null;
}

export interface ParsedCgroupLine {
  hierarchyId: string;
  controllers: string[];
  path: string;
}

/** Parses `/proc/self/cgroup` (`id:controllers:path` lines; v2 is `0::path`). */
export function parseProcCgroup(text: string): ParsedCgroupLine[] {
  const out: ParsedCgroupLine[] = [];
  for (const line of text.split('\n')) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line.trim());
    if (m) out.push({ hierarchyId: m[1]!, controllers: m[2] === '' ? [] : m[2]!.split(','), path: m[3]! });
  }
  return out;
}

export interface ParsedMount {
  root: string;
  mountPoint: string;
  fsType: string;
  superOptions: string[];
}

/** Parses `/proc/self/mountinfo`, keeping the cgroup (v1) and cgroup2 mounts. */
export function parseCgroupMounts(text: string): ParsedMount[] {
  const out: ParsedMount[] = [];
  for (const line of text.split('\n')) {
    const sep = line.indexOf(' - ');
    if (sep < 0) continue;
    const left = line.slice(0, sep).split(' ');
    const right = line.slice(sep + 3).split(' ');
    const fsType = right[0];
    if (fsType !== 'cgroup' && fsType !== 'cgroup2') continue;
    const unescapeOctal = (s: string): string =>
      s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8)));
    out.push({
      root: unescapeOctal(left[3] ?? '/'),
      mountPoint: unescapeOctal(left[4] ?? ''),
      fsType,
      superOptions: (right[2] ?? '').split(','),
    });
  }
  return out;
}

function dirOf(mount: ParsedMount, cgroupPath: string): string | null {
  const rel = posix.relative(mount.root, cgroupPath);
  if (rel.startsWith('..')) return null; // our cgroup is not visible through this mount
  return join(mount.mountPoint, rel);
}

/**
 * Finds this process's memory cgroup. v1 (a `memory` controller line) is preferred when both
 * exist, as on hosts that mount the v1 memory controller next to an empty v2 tree.
 */
export function memoryCgroupSupport(opts: { procCgroup?: string; mountinfo?: string } = {}): MemoryCgroupSupport {
  if (process.platform !== 'linux')
    return { available: false, reason: `memory cgroups are Linux only (this is ${process.platform})` };
  let cgroupText: string;
  let mountText: string;
  try {
    cgroupText = opts.procCgroup ?? readFileSync('/proc/self/cgroup', 'utf8');
    mountText = opts.mountinfo ?? readFileSync('/proc/self/mountinfo', 'utf8');
  } catch (err) {
    return {
      available: false,
      reason: `cannot read /proc/self/cgroup or /proc/self/mountinfo (${(err as NodeJS.ErrnoException).code ?? err})`,
    };
  }
  const lines = parseProcCgroup(cgroupText);
  const mounts = parseCgroupMounts(mountText);
  const v1 = lines.find((l) => l.controllers.includes('memory'));
  if (v1) {
    const mount = mounts.find((m) => m.fsType === 'cgroup' && m.superOptions.includes('memory'));
    if (!mount)
      return {
        available: false,
        reason:
          'this process is in a v1 memory cgroup, but no cgroup mount with the memory controller is visible in ' +
          '/proc/self/mountinfo',
      };
    const dir = dirOf(mount, v1.path);
    if (!dir || !existsSync(join(dir, 'memory.limit_in_bytes'))) {
      return {
        available: false,
        reason:
          `this process's v1 memory cgroup ${v1.path} is not reachable under ${mount.mountPoint}` +
          ` (a container that hides its cgroup path?)`,
      };
    }
    return { available: true, version: 1, parentDir: dir };
  }
  const v2 = lines.find((l) => l.hierarchyId === '0' && l.controllers.length === 0);
  const mount = mounts.find((m) => m.fsType === 'cgroup2');
  if (!v2 || !mount)
    return {
      available: false,
      reason: 'no memory controller: this process is in no v1 memory cgroup and no cgroup2 tree is mounted',
    };
  const dir = dirOf(mount, v2.path);
  if (!dir)
    return { available: false, reason: `this process's cgroup ${v2.path} is not reachable under ${mount.mountPoint}` };
  let controllers = '';
  try {
    controllers = readFileSync(join(dir, 'cgroup.controllers'), 'utf8');
  } catch {
    // reported below
  }
  if (!controllers.split(/\s+/).includes('memory')) {
    return {
      available: false,
      reason:
        `the memory controller is not available in ${dir} (cgroup.controllers: '${controllers.trim()}` +
        `'; it is bound to a v1 hierarchy or not delegated)`,
    };
  }
  return { available: true, version: 2, parentDir: dir };
}

/** A cgroup this process created and has not removed yet (removed at exit too). */
const created = new Set<string>();
let exitHook = false;

export interface CreatedCgroup {
  dir: string;
  version: 1 | 2;
  /** The limit the kernel reports back (v1 rounds down to a page). */
  limitBytes: number;
  /** Whether swap is held to the same limit (v1 `memory.memsw.limit_in_bytes`, v2 `memory.swap.max` 0). */
  swapLimited: boolean;
}

function write(dir: string, file: string, value: string): void {
  writeFileSync(join(dir, file), value);
}

function readNumber(path: string): number | null {
  try {
    const t = readFileSync(path, 'utf8').trim();
    if (t === 'max') return Number.POSITIVE_INFINITY;
    const n = Number(t);
    return Number.isFinite(n) ? n : null;
  } catch {
    return null;
  }
}

function readKeyed(path: string, key: string): number | null {
  try {
    const m = new RegExp(`^${key} (\\d+)$`, 'm').exec(readFileSync(path, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/**
 * Creates `<parent>/<prefix>-<pid>-<random>` with the hard limit. Swap is held to the same limit
 * where the kernel offers the knob (a GPU has no swap either). Throws a plain Error with the
 * reason; the cgroup is removed again when setting the limit fails.
 */
export function createMemoryCgroup(
  support: { version: 1 | 2; parentDir: string },
  limitBytes: number,
  prefix: string,
): CreatedCgroup {
  const dir = join(support.parentDir, `${prefix}-${process.pid}-${randomBytes(4).toString('hex')}`);
  mkdirSync(dir);
  created.add(dir);
  if (!exitHook) {
    exitHook = true;
    process.once('exit', () => {
      for (const d of created) removeMemoryCgroup(d, 2000); // kills what is left, waits for it to go
    });
  }
  try {
    const bytes = String(Math.floor(limitBytes));
    let swapLimited = false;
    if (support.version === 1) {
      write(dir, 'memory.limit_in_bytes', bytes);
      if (existsSync(join(dir, 'memory.memsw.limit_in_bytes'))) {
        write(dir, 'memory.memsw.limit_in_bytes', bytes); // memsw ≥ memory: set after the memory limit
        swapLimited = true;
      }
    } else {
      write(dir, 'memory.max', bytes);
      if (existsSync(join(dir, 'memory.swap.max'))) {
        write(dir, 'memory.swap.max', '0');
        swapLimited = true;
      }
    }
    const readBack = readNumber(join(dir, support.version === 1 ? 'memory.limit_in_bytes' : 'memory.max'));
    if (readBack === null || readBack > limitBytes)
      throw new Error(`the kernel reports a limit of ${readBack} after writing ${bytes}`);
    return { dir, version: support.version, limitBytes: readBack, swapLimited };
  } catch (err) {
    removeMemoryCgroup(dir, 0);
    throw err;
  }
}

/** Reads peak usage and the out-of-memory counters of a cgroup. */
export function readMemoryCgroupCounters(dir: string, version: 1 | 2): MemoryCgroupCounters {
  if (version === 1) {
    return {
      peakBytes: readNumber(join(dir, 'memory.max_usage_in_bytes')),
      // with memsw limited too, a charge fails at the memsw counter first: count both
      limitHits: sumKnown(readNumber(join(dir, 'memory.failcnt')), readNumber(join(dir, 'memory.memsw.failcnt'))),
      oomKills: readKeyed(join(dir, 'memory.oom_control'), 'oom_kill'),
    };
  }
  return {
    peakBytes: readNumber(join(dir, 'memory.peak')),
    limitHits: readKeyed(join(dir, 'memory.events'), 'max'),
    oomKills: readKeyed(join(dir, 'memory.events'), 'oom_kill'),
  };
}

function sumKnown(a: number | null, b: number | null): number | null {
  return a === null && b === null ? null : (a ?? 0) + (b ?? 0);
}

/** Pids still in the cgroup. */
export function cgroupPids(dir: string): number[] {
  try {
    return readFileSync(join(dir, 'cgroup.procs'), 'utf8')
      .split('\n')
      .filter((s) => s.trim() !== '')
      .map(Number);
  } catch {
    return [];
  }
}

/**
 * Kills what is left in the cgroup (SIGKILL) and removes it, retrying while the kernel still
 * counts exiting tasks (EBUSY), for up to `waitMs`. Returns whether the directory is gone.
 */
export function removeMemoryCgroup(dir: string, waitMs = 5000): boolean {
  const deadline = Date.now() + waitMs;
  for (;;) {
    for (const pid of cgroupPids(dir)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    try {
      rmdirSync(dir);
      created.delete(dir);
      return true;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') {
        created.delete(dir);
        return true;
      }
      if (Date.now() >= deadline) return false;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
    }
  }
}
