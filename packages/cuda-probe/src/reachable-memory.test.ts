import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { useTempDir } from '@soup/test-utils';
import { describe, expect, it } from 'vitest';
import { DeviceQueryError } from './errors';
import { reachableMemory } from './reachable-memory';
import { readMeminfo } from './_proc';

const MiB = 2 ** 20;
const GiB = 2 ** 30;

function write(path: string, text: string): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, text);
}

/** A fake /proc (self/cgroup, self/mountinfo, meminfo) plus a fake cgroup tree, all in a temp dir. */
function fakeProc(opts: { cgroup: string; mountinfo: (root: string) => string; memAvailableBytes?: number }): string {
  const root = useTempDir('soup-proc-');
  write(join(root, 'proc/self/cgroup'), opts.cgroup);
  write(join(root, 'proc/self/mountinfo'), opts.mountinfo(root));
  write(
    join(root, 'proc/meminfo'),
    `MemTotal:       24684084 kB\nMemFree:         1000000 kB\n` +
      (opts.memAvailableBytes !== undefined ? `MemAvailable:   ${opts.memAvailableBytes / 1024} kB\n` : ''),
  );
  return root;
}

describe('reachableMemory', () => {
  it('reads this machine: a positive figure no larger than MemTotal', () => {
    const got = reachableMemory();
    expect(got.bytes).toBeGreaterThan(0);
    expect(got.bytes).toBeLessThanOrEqual(readMeminfo()!.totalBytes);
    expect(['cgroup-v2', 'cgroup-v1', 'meminfo']).toContain(got.source);
  });

  it('cgroup v2: limit minus usage, inactive page cache not counted, parent "max" ignored', () => {
    const root = fakeProc({
      cgroup: '0::/user.slice/app.scope\n',
      mountinfo: (r) => `41 31 0:38 / ${r}/cg2 rw,relatime - cgroup2 cgroup2 rw\n`,
      memAvailableBytes: 8 * GiB,
    });
    write(join(root, 'cg2/user.slice/memory.max'), 'max\n');
    write(join(root, 'cg2/user.slice/memory.current'), `${5 * GiB}\n`);
    write(join(root, 'cg2/user.slice/app.scope/memory.max'), `${GiB}\n`);
    write(join(root, 'cg2/user.slice/app.scope/memory.current'), `${300 * MiB}\n`);
    write(join(root, 'cg2/user.slice/app.scope/memory.stat'), `anon 1234\ninactive_file ${100 * MiB}\nactive_file 5\n`);
    expect(reachableMemory({ procRoot: join(root, 'proc') })).toEqual({
      bytes: GiB - 200 * MiB,
      source: 'cgroup-v2',
      cgroupLimitBytes: GiB,
      cgroupUsageBytes: 200 * MiB,
      memAvailableBytes: 8 * GiB,
    });
  });

  it('cgroup v2: a tighter ancestor wins', () => {
    const root = fakeProc({
      cgroup: '0::/a/b\n',
      mountinfo: (r) => `41 31 0:38 / ${r}/cg2 rw - cgroup2 cgroup2 rw\n`,
      memAvailableBytes: 8 * GiB,
    });
    write(join(root, 'cg2/a/memory.max'), `${512 * MiB}`);
    write(join(root, 'cg2/a/memory.current'), `${400 * MiB}`);
    write(join(root, 'cg2/a/b/memory.max'), `${GiB}`);
    write(join(root, 'cg2/a/b/memory.current'), `${100 * MiB}`);
    const got = reachableMemory({ procRoot: join(root, 'proc') });
    expect(got.bytes).toBe(112 * MiB);
    expect(got.cgroupLimitBytes).toBe(512 * MiB);
  });

  it('cgroup v1: memory.limit_in_bytes minus usage (the layout of this repo CI machine)', () => {
    const root = fakeProc({
      cgroup: '9:name=systemd:/\n4:memory:/process_api/51f6\n1:cpu:/\n0::/\n',
      mountinfo: (r) =>
        `32 31 0:29 / ${r}/cg/cpu rw,relatime - cgroup cgroup rw,cpu\n` +
        `35 31 0:32 / ${r}/cg/memory rw,relatime - cgroup cgroup rw,memory\n` +
        `41 31 0:38 / ${r}/cg/unified rw,relatime - cgroup2 cgroup2 rw\n`,
      memAvailableBytes: 8 * GiB,
    });
    write(join(root, 'cg/memory/memory.limit_in_bytes'), '9223372036854771712\n');
    write(join(root, 'cg/memory/process_api/51f6/memory.limit_in_bytes'), `${2 * GiB}\n`);
    write(join(root, 'cg/memory/process_api/51f6/memory.usage_in_bytes'), `${GiB}\n`);
    write(join(root, 'cg/memory/process_api/51f6/memory.stat'), `cache 1\ntotal_inactive_file ${256 * MiB}\n`);
    const got = reachableMemory({ procRoot: join(root, 'proc') });
    expect(got).toMatchObject({ bytes: GiB + 256 * MiB, source: 'cgroup-v1', cgroupLimitBytes: 2 * GiB });
  });

  it('MemAvailable bounds a cgroup limit larger than the host can give', () => {
    const root = fakeProc({
      cgroup: '0::/big\n',
      mountinfo: (r) => `41 31 0:38 / ${r}/cg2 rw - cgroup2 cgroup2 rw\n`,
      memAvailableBytes: 3 * GiB,
    });
    write(join(root, 'cg2/big/memory.max'), `${64 * GiB}`);
    write(join(root, 'cg2/big/memory.current'), `${GiB}`);
    expect(reachableMemory({ procRoot: join(root, 'proc') })).toMatchObject({ bytes: 3 * GiB, source: 'meminfo' });
  });

  it('no cgroup limit: MemAvailable', () => {
    const root = fakeProc({ cgroup: '0::/\n', mountinfo: () => '', memAvailableBytes: 5 * GiB });
    expect(reachableMemory({ procRoot: join(root, 'proc') })).toEqual({
      bytes: 5 * GiB,
      source: 'meminfo',
      memAvailableBytes: 5 * GiB,
    });
  });

  it('throws a DeviceQueryError naming the fix when nothing can be read', () => {
    const root = useTempDir('soup-proc-');
    expect(() => reachableMemory({ procRoot: root })).toThrow(DeviceQueryError);
    expect(() => reachableMemory({ procRoot: root })).toThrow(/pass budgetBytes/);
  });
});
