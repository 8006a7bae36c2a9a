import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { DeviceQueryError } from './errors';
import { readMeminfo } from './_proc';

/** Options of {@link reachableMemory}. */
export interface ReachableMemoryOptions {
  /**
   * Root of the proc filesystem (`self/cgroup`, `self/mountinfo`, `meminfo` are read under it).
   * Tests point it at a directory of fixture files.
   * @default '/proc'
   */
  procRoot?: string;
}

/** Host memory this process can still reach, and where the figure comes from. */
export interface ReachableMemory {
  /** Bytes that can still be allocated: the smaller of the cgroup headroom and MemAvailable. */
  bytes: number;
  /** Which reading bound `bytes`. */
  source: 'cgroup-v2' | 'cgroup-v1' | 'meminfo';
  /** The tightest cgroup memory limit on the way to the root, when one is set. */
  cgroupLimitBytes?: number;
  /** That cgroup's usage minus its inactive page cache, when a limit is set. */
  cgroupUsageBytes?: number;
  /** `MemAvailable` of /proc/meminfo, when readable. */
  memAvailableBytes?: number;
}

interface Mount {
  root: string;
  mountPoint: string;
  fsType: string;
  superOptions: string[];
}

function parseMountinfo(text: string): Mount[] {
  const out: Mount[] = [];
  for (const line of text.split('\n')) {
    const sep = line.indexOf(' - ');
    if (sep === -1) continue;
    const left = line.slice(0, sep).split(' ');
    const right = line.slice(sep + 3).split(' ');
    const root = left[3];
    const mountPoint = left[4];
    const fsType = right[0];
    if (root === undefined || mountPoint === undefined || fsType === undefined) continue;
    out.push({
      root,
      mountPoint: mountPoint.replace(/\\040/g, ' '),
      fsType,
      superOptions: (right[2] ?? '').split(','),
    });
  }
  return out;
}

function readNumber(path: string): number | 'max' | null {
  try {
    const text = readFileSync(path, 'utf8').trim();
    if (text === 'max') return 'max';
    const n = Number(text);
    return Number.isFinite(n) ? n : null;
  } catch {
    return null;
  }
}

function readStat(path: string, field: string): number {
  try {
    const m = new RegExp(`^${field} (\\d+)$`, 'm').exec(readFileSync(path, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

// Limits at or above this are "no limit" (cgroup v1 writes PAGE_COUNTER_MAX * page size).
const UNLIMITED = 2 ** 60;

/** The tightest (limit - usage) from the process's cgroup up to the hierarchy's mount point. */
function cgroupHeadroom(
  mount: Mount,
  cgroupPath: string,
  files: { limit: string; usage: string; stat: string; inactive: string },
): { limitBytes: number; usageBytes: number } | null {
  const rel = cgroupPath.startsWith(mount.root) ? cgroupPath.slice(mount.root.length) : cgroupPath;
  let dir = join(mount.mountPoint, rel);
  let best: { limitBytes: number; usageBytes: number } | null = null;
  for (;;) {
    const limit = readNumber(join(dir, files.limit));
    if (typeof limit === 'number' && limit < UNLIMITED) {
      const usage = readNumber(join(dir, files.usage));
      if (typeof usage === 'number') {
        const usageBytes = Math.max(0, usage - readStat(join(dir, files.stat), files.inactive));
        if (best === null || limit - usageBytes < best.limitBytes - best.usageBytes)
          best = { limitBytes: limit, usageBytes };
      }
    }
    if (dir === mount.mountPoint || dir === dirname(dir) || !dir.startsWith(mount.mountPoint)) break;
    dir = dirname(dir);
  }
  return best;
}

/**
 * Host memory this process can still reach: the cgroup memory limit minus the cgroup's usage
 * (v2 `memory.max` / `memory.current`, or v1 `memory.limit_in_bytes` / `memory.usage_in_bytes`,
 * tightest level on the way up, inactive page cache not counted as used), capped by
 * `MemAvailable` from /proc/meminfo; `MemAvailable` alone when no cgroup limit is set.
 *
 * @throws {DeviceQueryError} neither a cgroup limit nor /proc/meminfo can be read (not Linux)
 */
export function reachableMemory(options: ReachableMemoryOptions = {}): ReachableMemory {
  const procRoot = options.procRoot ?? '/proc';
  const meminfo = readMeminfo(procRoot);
  const memAvailableBytes = meminfo?.availableBytes ?? undefined;

  let cgroup: { limitBytes: number; usageBytes: number; source: 'cgroup-v2' | 'cgroup-v1' } | null = null;
  try {
    const mounts = parseMountinfo(readFileSync(join(procRoot, 'self', 'mountinfo'), 'utf8'));
    const lines = readFileSync(join(procRoot, 'self', 'cgroup'), 'utf8').split('\n');
    for (const line of lines) {
      const [hier, controllers, ...rest] = line.split(':');
      const path = rest.join(':');
      if (hier === undefined || controllers === undefined || !path) continue;
      let found: { limitBytes: number; usageBytes: number } | null = null;
      let source: 'cgroup-v2' | 'cgroup-v1';
      if (hier === '0' && controllers === '') {
        source = 'cgroup-v2';
        for (const m of mounts.filter((x) => x.fsType === 'cgroup2')) {
          found = cgroupHeadroom(m, path, {
            limit: 'memory.max',
            usage: 'memory.current',
            stat: 'memory.stat',
            inactive: 'inactive_file',
          });
          if (found) break;
        }
      } else if (controllers.split(',').includes('memory')) {
        source = 'cgroup-v1';
        for (const m of mounts.filter((x) => x.fsType === 'cgroup' && x.superOptions.includes('memory'))) {
          found = cgroupHeadroom(m, path, {
            limit: 'memory.limit_in_bytes',
            usage: 'memory.usage_in_bytes',
            stat: 'memory.stat',
            inactive: 'total_inactive_file',
          });
          if (found) break;
        }
      } else continue;
      if (found && (cgroup === null || found.limitBytes - found.usageBytes < cgroup.limitBytes - cgroup.usageBytes)) {
        cgroup = { ...found, source };
      }
    }
  } catch {
    // no cgroup information (not Linux, or /proc hidden): MemAvailable alone
  }

  if (cgroup) {
    const headroom = Math.max(0, cgroup.limitBytes - cgroup.usageBytes);
    const base = { cgroupLimitBytes: cgroup.limitBytes, cgroupUsageBytes: cgroup.usageBytes };
    if (memAvailableBytes !== undefined && memAvailableBytes < headroom) {
      return { bytes: memAvailableBytes, source: 'meminfo', ...base, memAvailableBytes };
    }
    return {
      bytes: headroom,
      source: cgroup.source,
      ...base,
      ...(memAvailableBytes !== undefined ? { memAvailableBytes } : {}),
    };
  }
  if (memAvailableBytes !== undefined) return { bytes: memAvailableBytes, source: 'meminfo', memAvailableBytes };
  throw new DeviceQueryError(
    `cannot tell how much host memory is reachable: no cgroup memory limit and no MemAvailable in ` +
      `${join(procRoot, 'meminfo')}; pass budgetBytes explicitly`,
  );
}
