// The output folder's lock judges its holder as the store's lease does (boot id, pid namespace, pid and start
// time, not the hostname alone), and refuses while any process still works inside the folder.
import { runProcess, useTempDir } from '@soup/test-utils';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, readlinkSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import { OutputLockedError } from './errors';
import { acquireOutputLock, LOCK_NAME } from './lock';

const DIST = fileURLToPath(new URL('../dist/index.js', import.meta.url));

/** acquireOutputLock on `dir` from a process in a new UTS namespace whose hostname is other-host. */
function lockFromOtherHost(dir: string) {
  const code =
    `const { acquireOutputLock } = await import(${JSON.stringify(DIST)});` +
    `try { acquireOutputLock({ dir: ${JSON.stringify(dir)} }).release(); console.log('TOOK IT'); }` +
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the child's own template literal, in its source text
    ' catch (e) { console.log(`${e.name}: ${e.message}`); }';
  return runProcess(
    'unshare',
    ['--uts', 'sh', '-c', 'hostname other-host && exec "$0" "$@"', process.execPath, '--input-type=module', '-e', code],
    { timeoutMs: 20_000 },
  );
}

/** Starts `bash -c "cd <cwd> && setsid <command> &"` (bash exits at once); returns the setsid child's pid. */
function setsidChild(cwd: string, js: string): number {
  const r = spawnSync(
    'bash',
    ['-c', `cd "$0"; setsid "$1" -e "$2" >/dev/null 2>&1 & echo $!`, cwd, process.execPath, js],
    {
      encoding: 'utf8',
    },
  );
  const pid = Number(r.stdout.trim());
  onTestFinished(() => {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  });
  return pid;
}

const waitFor = async (ok: () => boolean): Promise<void> => {
  for (let i = 0; i < 100 && !ok(); i++) await new Promise((r) => setTimeout(r, 20));
};

describe('the output folder lock', () => {
  const UTS =
    'a session in another UTS namespace (another hostname) does not take it from a live holder; a dead one is ' +
    'taken over';
  it(UTS, async () => {
    const dir = useTempDir();
    const held = acquireOutputLock({ dir });
    const refused = await lockFromOtherHost(dir);
    expect(refused.stdout, refused.stderr).toContain(`OutputLockedError: ${dir} is in use by an earlier soup run`);
    expect(refused.stdout).toContain(`soup run (pid ${process.pid}) still lives`);
    held.release();

    // The same record, written by a process that has exited (on this boot, in this pid namespace), on another host.
    const gone = spawnSync(process.execPath, ['-e', 'console.log(process.pid)'], { encoding: 'utf8' });
    const rec = JSON.parse(JSON.stringify({ ...readLockOf(dir), host: 'some-host', pid: Number(gone.stdout) }));
    writeFileSync(join(dir, LOCK_NAME), JSON.stringify(rec));
    const took = await lockFromOtherHost(dir);
    expect(took.stdout, took.stderr).toContain('TOOK IT');
  });

  it('a holder in another pid namespace counts as live while it refreshed its lock within 30 s', () => {
    const dir = useTempDir();
    const gone = spawnSync(process.execPath, ['-e', 'console.log(process.pid)'], { encoding: 'utf8' });
    const rec = { ...readLockOf(dir), pid: Number(gone.stdout), pidns: 'pid:[1]', started_at: 'then' };
    writeFileSync(join(dir, LOCK_NAME), JSON.stringify(rec));
    expect(() => acquireOutputLock({ dir })).toThrow(
      /in another pid namespace \(pid:\[1\]\).* refreshed its lock 0 s ago/,
    );
    const old = new Date(Date.now() - 60_000);
    utimesSync(join(dir, LOCK_NAME), old, old);
    const stale: number[] = [];
    acquireOutputLock({ dir, onStale: (r) => stale.push(r.pid) }).release();
    expect(stale).toEqual([rec.pid]);
  });

  it('refuses while a process left by `bash -c "setsid … &"` works inside the folder, naming its pid', async () => {
    const dir = useTempDir();
    const out = join(dir, 'out');
    mkdirSync(out);
    const inCwd = setsidChild(out, 'setInterval(() => {}, 1000)');
    // Its cwd is set before `setsid` execs node: wait for node itself, the name the refusal gives.
    await waitFor(() => readLinkOr(`/proc/${inCwd}/cwd`) === out && commOf(inCwd) === 'node');
    expect(() => acquireOutputLock({ dir: out })).toThrow(
      new RegExp(`is in use: pid ${inCwd} \\(node\\) has its working directory inside it`),
    );
    process.kill(inCwd, 'SIGKILL');
    await waitFor(() => readLinkOr(`/proc/${inCwd}/cwd`) === null);

    const file = join(out, 'events.log');
    const holder = setsidChild(
      dir,
      `const fs = require('node:fs'); const fd = fs.openSync(${JSON.stringify(file)}, 'a'); ` +
        "setInterval(() => fs.writeSync(fd, '.'), 100);",
    );
    await waitFor(() => sizeOr(file) > 0);
    let err: unknown = null;
    try {
      acquireOutputLock({ dir: out });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(OutputLockedError);
    expect((err as OutputLockedError).pid).toBe(holder);
    expect((err as Error).message).toContain(`has ${file} open inside it`);
    process.kill(holder, 'SIGKILL');
    await waitFor(() => readLinkOr(`/proc/${holder}/cwd`) === null);
    acquireOutputLock({ dir: out }).release();
  });
});

function readLockOf(dir: string): Record<string, unknown> {
  const lock = acquireOutputLock({ dir });
  const rec = JSON.parse(readFileSync(lock.path, 'utf8')) as Record<string, unknown>;
  lock.release();
  expect(rec).toMatchObject({ host: hostname(), boot_id: expect.any(String), pidns: expect.any(String) });
  return rec;
}

function sizeOr(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

function readLinkOr(path: string): string | null {
  try {
    return readlinkSync(path);
  } catch {
    return null;
  }
}

function commOf(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return null;
  }
}
