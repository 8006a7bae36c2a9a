import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { memoryCgroupSupport as detectWith, parseCgroupMounts, parseProcCgroup } from './_memory-cgroup';
import { MemoryCgroupUnavailableError } from './errors';
import { memoryCgroupSupport, runInMemoryCgroup } from './run-in-memory-cgroup';

const MiB = 2 ** 20;
const V1_CGROUP = '9:name=systemd:/\n4:memory:/process_api/abc\n1:cpu:/\n0::/\n';
const V1_MOUNTS = [
  '35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
  '41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
].join('\n');

describe('finding the memory cgroup', () => {
  it('parses /proc/self/cgroup and the cgroup mounts of mountinfo', () => {
    expect(parseProcCgroup(V1_CGROUP)).toContainEqual({
      hierarchyId: '4',
      controllers: ['memory'],
      path: '/process_api/abc',
    });
    expect(parseProcCgroup('0::/user.slice/x.scope\n')).toEqual([
      { hierarchyId: '0', controllers: [], path: '/user.slice/x.scope' },
    ]);
    expect(parseCgroupMounts(V1_MOUNTS)).toEqual([
      { root: '/', mountPoint: '/sys/fs/cgroup/memory', fsType: 'cgroup', superOptions: ['rw', 'memory'] },
      { root: '/', mountPoint: '/sys/fs/cgroup/unified', fsType: 'cgroup2', superOptions: ['rw'] },
    ]);
  });

  it('says why when there is no memory controller, never guessing', () => {
    const none = detectWith({ procCgroup: '1:cpu:/\n', mountinfo: '' });
    expect(none.available).toBe(false);
    if (!none.available) expect(none.reason).toMatch(/no memory controller/);
    const hidden = detectWith({ procCgroup: '4:memory:/x\n', mountinfo: '' });
    expect(hidden.available).toBe(false);
    if (!hidden.available) expect(hidden.reason).toMatch(/no cgroup mount with the memory controller/);
    const v2 = detectWith({
      procCgroup: '0::/nowhere-soup-i15\n',
      mountinfo: '41 31 0:38 / /nonexistent-soup rw - cgroup2 cgroup2 rw',
    });
    expect(v2.available).toBe(false);
    if (!v2.available) expect(v2.reason).toMatch(/memory controller is not available/);
  });
});

const support = memoryCgroupSupport();
const reason = support.available ? '' : support.reason;
if (!support.available) console.log(`[skip] runInMemoryCgroup on this machine: ${reason}`);

const node = (code: string): { file: string; args: string[] } => ({ file: process.execPath, args: ['-e', code] });

describe.skipIf(!support.available)('runInMemoryCgroup (real cgroup)', () => {
  it('a child within the limit exits 0; its peak is the cgroup peak; the cgroup is removed', async () => {
    const run = await runInMemoryCgroup({
      ...node('const b = Buffer.alloc(40 * 2 ** 20, 1); console.log(b[5])'),
      limitBytes: 256 * MiB,
      namePrefix: 'soup-i15-test',
    });
    expect(run.exitCode).toBe(0);
    expect(run.stdout.trim()).toBe('1');
    expect(run.cgroup.peakBytes).toBeGreaterThanOrEqual(40 * MiB);
    expect(run.cgroup.peakBytes).toBeLessThanOrEqual(256 * MiB);
    expect(run.cgroup.oomKilled).toBe(false);
    expect(run.cgroup.oomKills).toBe(0);
    expect(run.cgroup.removed).toBe(true);
    expect(existsSync(run.cgroup.dir)).toBe(false);
  });

  it('a child above the limit is killed by the OOM killer, and the run says so', async () => {
    const run = await runInMemoryCgroup({
      ...node(
        'const a = []; for (let i = 0; i < 64; i++) a.push(Buffer.alloc(8 * 2 ** 20, 1)); console.log("survived")',
      ),
      limitBytes: 96 * MiB,
      namePrefix: 'soup-i15-test',
    });
    expect(run.signal).toBe('SIGKILL');
    expect(run.stdout).not.toMatch(/survived/);
    expect(run.cgroup.oomKilled).toBe(true);
    // a counter is read; on kernel 6.18 v1 it stayed 0 at an OOM kill: oomKills is the signal
    expect(run.cgroup.limitHits).not.toBeNull();
    expect(run.cgroup.removed).toBe(true);
  });

  it('counts the page cache a child dirties, which RSS does not', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'soup-i15-cg-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'f.bin');
    const code =
      `const fs = require('node:fs'); const b = Buffer.alloc(8 * 2 ** 20, 7); const fd = fs.openSync(` +
      `${JSON.stringify(file)}, 'w');` +
      `for (let i = 0; i < 12; i++) fs.writeSync(fd, b); fs.closeSync(fd);` +
      `console.log(JSON.stringify({ hwm: Number(/VmHWM:\\s+(\\d+)/.exec(fs.readFileSync('/proc/self/status', ` +
      `'utf8'))[1]) * 1024 }))`;
    const run = await runInMemoryCgroup({ ...node(code), limitBytes: 512 * MiB, namePrefix: 'soup-i15-test' });
    expect(run.exitCode).toBe(0);
    const { hwm } = JSON.parse(run.stdout) as { hwm: number };
    // 96 MiB written: the cgroup's peak holds them, the child's resident set does not
    expect(run.cgroup.peakBytes!).toBeGreaterThan(96 * MiB);
    expect(run.cgroup.peakBytes! - hwm).toBeGreaterThan(40 * MiB);
  });

  it('removes the cgroup after a timeout and after an abort (SIGKILL inside the cap)', async () => {
    const slow = node('setInterval(() => {}, 1000)');
    const timed = await runInMemoryCgroup({
      ...slow,
      limitBytes: 128 * MiB,
      timeoutMs: 500,
      namePrefix: 'soup-i15-test',
    });
    expect(timed.timedOut).toBe(true);
    expect(timed.cgroup.removed).toBe(true);
    expect(existsSync(timed.cgroup.dir)).toBe(false);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 300);
    let spawned: { pid: number | undefined; cgroupDir: string } | undefined;
    const aborted = await runInMemoryCgroup({
      ...slow,
      limitBytes: 128 * MiB,
      signal: ac.signal,
      namePrefix: 'soup-i15-test',
      onSpawn: (c) => (spawned = c),
    });
    expect(aborted.aborted).toBe(true);
    expect(spawned?.pid).toBeGreaterThan(0);
    expect(spawned?.cgroupDir).toBe(aborted.cgroup.dir);
    expect(aborted.signal).toBe('SIGKILL');
    expect(aborted.cgroup.removed).toBe(true);
  });

  it('refuses a bad limit naming the field', async () => {
    await expect(runInMemoryCgroup({ ...node('0'), limitBytes: 12.5 })).rejects.toThrow(
      /limitBytes must be an integer/,
    );
  });
});

describe.skipIf(support.available)('runInMemoryCgroup without a cgroup', () => {
  it('throws MemoryCgroupUnavailableError with the reason', async () => {
    await expect(runInMemoryCgroup({ ...node('0'), limitBytes: 64 * MiB })).rejects.toBeInstanceOf(
      MemoryCgroupUnavailableError,
    );
  });
});
