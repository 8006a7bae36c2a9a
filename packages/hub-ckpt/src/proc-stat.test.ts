// The /proc/<pid>/stat parser against a real process whose command name holds spaces and ')' (a link to node named
// so that a parser cutting at the first ')' reads a zombie whose parent is pid 9).
import { spawnUntil, useTempDir } from '@soup/test-utils';
import { symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseProcStat, readProcStat } from './proc-stat';

const TRICKY = 'a) Z 9 9 (b';

describe('parseProcStat', () => {
  it('counts the fields after the last ")" when the command name holds spaces and parentheses', () => {
    const text = `4242 (${TRICKY}) S 17 4242 4000 0 -1 4194304 1 0 0 0 4 0 0 0 20 0 1 0 5905698 745713664 1 0\n`;
    expect(parseProcStat(text)).toEqual({
      pid: 4242,
      comm: TRICKY,
      state: 'S',
      ppid: 17,
      pgrp: 4242,
      session: 4000,
      startTicks: 5905698,
    });
  });

  it('returns null for a text of another shape', () => {
    expect(parseProcStat('')).toBeNull();
    expect(parseProcStat('4242 (sleep) S 17')).toBeNull();
  });
});

describe('readProcStat', () => {
  it('reads a running process named with spaces and ")" as that process', async () => {
    const link = join(useTempDir('soup-proc-stat-'), TRICKY);
    symlinkSync(process.execPath, link);
    const { child } = await spawnUntil(link, ['-e', 'console.log("up"); setTimeout(() => {}, 10000)'], 'up', {
      timeoutMs: 10_000,
    });
    const self = readProcStat('self')!;
    expect(readProcStat(child.pid!)).toEqual({
      pid: child.pid,
      comm: TRICKY,
      state: expect.stringMatching(/^[RSD]$/),
      ppid: process.pid,
      pgrp: self.pgrp,
      session: self.session,
      startTicks: expect.any(Number),
    });
    expect(readProcStat(child.pid!)!.startTicks).toBeGreaterThanOrEqual(self.startTicks);
    child.kill('SIGKILL');
  });

  it('returns null for a pid that names no process', () => {
    expect(readProcStat(2 ** 22 + 1)).toBeNull();
  });
});
