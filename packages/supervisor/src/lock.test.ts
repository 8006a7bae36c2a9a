import { processStart } from '@soup/hub-ckpt';
import { useTempDir } from '@soup/test-utils';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { OutputLockedError } from './errors';
import { acquireOutputLock, LOCK_NAME } from './lock';

describe('one supervisor per output folder', () => {
  it('refuses while the recorded trainer lives (naming it), takes over a dead lock, releases on end', async () => {
    const dir = useTempDir();
    const a = acquireOutputLock({ dir });
    expect(() => acquireOutputLock({ dir })).toThrow(OutputLockedError); // this process holds it
    a.release();
    expect(existsSync(join(dir, LOCK_NAME))).toBe(false);

    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    try {
      await new Promise((r) => child.once('spawn', r));
      const rec = {
        format: 'soup-run-lock/1',
        host: hostname(),
        pid: 999_999,
        start: null,
        trainer_pid: child.pid,
        trainer_start: processStart(child.pid!),
        started_at: 'x',
      };
      writeFileSync(join(dir, LOCK_NAME), JSON.stringify(rec));
      expect(() => acquireOutputLock({ dir })).toThrow(new RegExp(`its trainer \\(pid ${child.pid}\\) still lives`));
      // The same pid with another start time is another process (pid reuse): the lock is stale.
      writeFileSync(join(dir, LOCK_NAME), JSON.stringify({ ...rec, trainer_start: '1' }));
      const stale: number[] = [];
      const b = acquireOutputLock({ dir, onStale: (r) => stale.push(r.pid) });
      expect(stale).toEqual([999_999]);
      expect(JSON.parse(readFileSync(join(dir, LOCK_NAME), 'utf8'))).toMatchObject({ pid: process.pid });
      b.release();
    } finally {
      child.kill('SIGKILL');
    }
  });
});
