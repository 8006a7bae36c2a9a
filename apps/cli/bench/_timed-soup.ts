import { spawn } from 'node:child_process';

/** What one timed soup command did: its exit, its output, and when its stderr first and last showed `line`. */
export interface TimedSoup {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Spawn to exit. */
  ms: number;
  /** Spawn to the first and to the latest chunk of stderr that added a match of `line` (NaN: none). */
  firstLineMs: number;
  lastLineMs: number;
}

/** Runs `node <args>` and times it, from spawn, against the lines of its stderr that match `line`. */
export async function timedSoup(
  args: string[],
  o: { cwd: string; env: NodeJS.ProcessEnv; line: RegExp },
): Promise<TimedSoup> {
  const line = new RegExp(o.line.source, o.line.flags.includes('g') ? o.line.flags : `${o.line.flags}g`);
  const t0 = performance.now();
  let firstLineMs = Number.NaN;
  let lastLineMs = Number.NaN;
  let stdout = '';
  let stderr = '';
  const child = spawn(process.execPath, args, { cwd: o.cwd, env: o.env });
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    const before = (stderr.match(line) ?? []).length;
    stderr += d;
    if ((stderr.match(line) ?? []).length > before) {
      lastLineMs = performance.now() - t0;
      if (Number.isNaN(firstLineMs)) firstLineMs = lastLineMs;
    }
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { code, stdout, stderr, ms: performance.now() - t0, firstLineMs, lastLineMs };
}
