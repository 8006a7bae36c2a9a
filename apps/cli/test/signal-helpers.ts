// Test-only helpers for the session-end signal tests: soup as the leader of its own process group (as a job's
// processes are), signals sent to a whole group, the sockets a process listens on, and what is complete on disk.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';
import { SOUP_BIN } from './run-helpers';

export interface GroupSoup {
  child: ChildProcess;
  /** soup's pid, which is also its process group's id. */
  pid: number;
  out: { stdout: string; stderr: string };
  /** Resolves once `re` matches the stream so far; rejects if soup exits first. */
  waitFor(stream: 'stdout' | 'stderr', re: RegExp): Promise<RegExpMatchArray>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

/** Starts `soup <args>` as the leader of a process group of its own; it and its group are killed when the test ends. */
export function soupInGroup(args: string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs = 120_000): GroupSoup {
  const child = spawn(process.execPath, [SOUP_BIN, ...args], {
    cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const pid = child.pid!;
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  onTestFinished(() => {
    clearTimeout(timer);
    signalGroup(pid, 'SIGKILL');
  });
  const out = { stdout: '', stderr: '' };
  const waiters: (() => void)[] = [];
  const poke = (): void => {
    for (const w of waiters) w();
  };
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    out.stdout += d;
    poke();
  });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    out.stderr += d;
    poke();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>(
    (resolve) =>
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        poke();
        resolve({ code, signal, ...out });
      }),
  );
  const waitFor = (stream: 'stdout' | 'stderr', re: RegExp): Promise<RegExpMatchArray> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        const m = re.exec(out[stream]);
        if (m) resolve(m);
        else if (child.exitCode !== null || child.signalCode !== null)
          reject(new Error(`soup exited before ${String(re)} on ${stream}:\n${out.stdout}\n${out.stderr}`));
      };
      waiters.push(check);
      check();
    });
  return { child, pid, out, waitFor, exited };
}

/** `kill -<sig> -<pgid>`: every process of the group; a group that is gone is no error. */
export function signalGroup(pgid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pgid, sig);
  } catch {
    // gone
  }
}

/** The TCP ports `pid` listens on (IPv4 and IPv6), read from /proc/net/tcp{,6} and the process's socket fds. */
export function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  const ports: number[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    if (!existsSync(table)) continue;
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      // local_address is field 1 (hex ip:port), st field 3 (0A = LISTEN), inode field 9.
      if (f.length > 9 && f[3] === '0A' && inodes.has(f[9]!)) ports.push(Number.parseInt(f[1]!.split(':')[1]!, 16));
    }
  }
  return ports;
}

/** The step of the newest `checkpoint-N/` in `dir` that holds its trainer_state.json (null: none). */
export function newestCompleteOnDisk(dir: string): number | null {
  if (!existsSync(dir)) return null;
  const steps = readdirSync(dir)
    .filter((n) => /^checkpoint-\d+$/.test(n) && existsSync(join(dir, n, 'trainer_state.json')))
    .map((n) => Number(n.slice('checkpoint-'.length)));
  return steps.length === 0 ? null : Math.max(...steps);
}

/** Whether the process `pid` still runs (a zombie counts as gone). */
export function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}
