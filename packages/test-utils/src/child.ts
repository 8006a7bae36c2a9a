import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { onTestFinished } from 'vitest';

export interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface RunNodeOptions {
  /** Extra arguments after the script. */
  args?: string[];
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Kill the child after this long (SIGKILL). @default 60000 */
  timeoutMs?: number;
  /** Text written to the child's stdin, then closed. */
  input?: string;
}

const live = new Set<ChildProcess>();

/** Spawns `process.execPath` on a script (or `-e` code), waits for it, and kills it if the test ends first. */
export function runNode(scriptOrArgs: string | string[], opts: RunNodeOptions = {}): Promise<ChildResult> {
  const argv = Array.isArray(scriptOrArgs) ? scriptOrArgs : [scriptOrArgs];
  return runProcess(process.execPath, [...argv, ...(opts.args ?? [])], opts);
}

/** Spawns any program (no shell), collects its output, kills it at the timeout or when the test ends. */
export function runProcess(file: string, args: string[], opts: RunNodeOptions = {}): Promise<ChildResult> {
  const spawnOpts: SpawnOptions = { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] };
  const child = spawn(file, args, spawnOpts);
  track(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  if (opts.input !== undefined) child.stdin?.end(opts.input);
  else child.stdin?.end();
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000);
  return new Promise((resolve, reject) => {
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/**
 * Spawns a long-lived child and resolves once its stdout contains `marker`
 * (e.g. a phase name), so a test can kill it at a precise point.
 */
export function spawnUntil(
  file: string,
  args: string[],
  marker: string | RegExp,
  opts: RunNodeOptions = {},
): Promise<{ child: ChildProcess; output: string; exited: Promise<ChildResult> }> {
  const child = spawn(file, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  track(child);
  let stdout = '';
  let stderr = '';
  const exited = new Promise<ChildResult>((resolve) => {
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(
          `child never printed ${String(marker)} within ${opts.timeoutMs ?? 60_000} ms; stderr: ${stderr.slice(-2000)}`,
        ),
      );
    }, opts.timeoutMs ?? 60_000);
    const matches = (): boolean => (typeof marker === 'string' ? stdout.includes(marker) : marker.test(stdout));
    child.stdout?.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
      if (matches()) {
        clearTimeout(timer);
        resolve({ child, output: stdout, exited });
      }
    });
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    void exited.then((r) => {
      clearTimeout(timer);
      if (!matches())
        reject(
          new Error(
            `child exited (${r.code ?? r.signal}) before printing ${String(marker)}; stderr: ${stderr.slice(-2000)}`,
          ),
        );
    });
  });
}

function track(child: ChildProcess): void {
  live.add(child);
  child.on('close', () => live.delete(child));
  try {
    onTestFinished(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
  } catch {
    // called outside a running test (e.g. beforeAll): the caller owns the child
  }
}

/** Kills every child this module spawned that is still running. */
export function killAllChildren(): void {
  for (const child of live) child.kill('SIGKILL');
}
