import { enterCgroupLaunch } from './_cgroup-trial';
import { runChild, tail } from './_child-runner';
import { findExecutable } from './_launch';
import {
  createMemoryCgroup,
  memoryCgroupSupport as detect,
  type MemoryCgroupCounters,
  type MemoryCgroupSupport,
  readMemoryCgroupCounters,
  removeMemoryCgroup,
} from './_memory-cgroup';
import { MemoryCgroupUnavailableError, ProbeOptionsError } from './errors';

export type { MemoryCgroupCounters, MemoryCgroupSupport };

/**
 * Whether a memory cgroup can be created under this process's own cgroup (`/proc/self/cgroup`):
 * `{available: true, version, parentDir}` or `{available: false, reason}`. Creates nothing; a
 * cgroup tree that is visible but not writable is only found out by {@link runInMemoryCgroup}.
 */
export function memoryCgroupSupport(): MemoryCgroupSupport {
  return detect();
}

/** Options of {@link runInMemoryCgroup}. */
export interface RunInMemoryCgroupOptions {
  /** The program (absolute, or found on PATH), run without a shell. */
  file: string;
  /** Its arguments. @default [] */
  args?: readonly string[];
  /**
   * Hard limit of the cgroup, in bytes: usage (anonymous memory AND page cache) above it is reclaimed, else the OOM
   * killer kills.
   */
  limitBytes: number;
  /** Environment of the child. @default process.env */
  env?: NodeJS.ProcessEnv;
  /** Working directory of the child. @default process.cwd() */
  cwd?: string;
  /** SIGKILL to the child's process group and everything in the cgroup after this long. @default 600000 */
  timeoutMs?: number;
  /** Written to the child's stdin, then closed. @default '' */
  input?: string;
  /** Open fd 3 as a pipe and parse what the child writes there as one JSON value. @default false */
  resultChannel?: boolean;
  /** Aborting kills the child with SIGKILL (the run still resolves, `aborted: true`, and the cgroup is removed). */
  signal?: AbortSignal;
  /**
   * Called once the child is spawned: its pid (the program keeps it: the shell execs it) and its cgroup's directory.
   */
  onSpawn?: (child: { pid: number | undefined; cgroupDir: string }) => void;
  /** Prefix of the cgroup's directory name (`<prefix>-<pid>-<random>`). @default 'soup-cap' */
  namePrefix?: string;
}

/** What {@link runInMemoryCgroup} reports. */
export interface MemoryCgroupRun {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Parsed fd 3 payload, when `resultChannel` and the child wrote valid JSON there. */
  result: unknown;
  timedOut: boolean;
  aborted: boolean;
  wallMs: number;
  /** The cgroup the child ran in, and its counters read after the child exited. */
  cgroup: MemoryCgroupCounters & {
    version: 1 | 2;
    /** The directory (already removed when `removed`). */
    dir: string;
    /** The limit the kernel applied (v1 rounds down to a page). */
    limitBytes: number;
    /** Whether swap was held to the same limit (v1 memsw, v2 `memory.swap.max` 0). */
    swapLimited: boolean;
    /** The kernel's OOM killer killed a process of the cgroup (`oomKills > 0`). */
    oomKilled: boolean;
    /** Whether the cgroup directory was removed afterwards. */
    removed: boolean;
  };
}

/**
 * Runs a child inside a fresh memory cgroup created under this process's own cgroup, with a
 * hard limit that counts everything the child charges — its anonymous memory and the page cache
 * it dirties, as a GPU's memory counts every allocation. Reads the cgroup's peak usage and
 * out-of-memory kills after the child exits, then removes the cgroup (also on timeout, abort and
 * error). Never falls back to an RSS reading.
 *
 * @throws {MemoryCgroupUnavailableError} when no cgroup can be made (its `reason` says why)
 * @throws {ProbeOptionsError} a bad `limitBytes` or `file`
 */
export async function runInMemoryCgroup(options: RunInMemoryCgroupOptions): Promise<MemoryCgroupRun> {
  if (!Number.isSafeInteger(options.limitBytes) || options.limitBytes < 4096) {
    throw new ProbeOptionsError(
      `limitBytes must be an integer number of bytes ≥ 4096 (got ${String(options.limitBytes)})`,
      { field: 'limitBytes' },
    );
  }
  const program = findExecutable(options.file, options.env ?? process.env);
  if (!program)
    throw new ProbeOptionsError(`file '${options.file}' is not an executable (absolute path, or a name on PATH)`, {
      field: 'file',
    });
  const sh = findExecutable('/bin/sh');
  if (!sh)
    throw new MemoryCgroupUnavailableError('/bin/sh, which moves the child into its cgroup before exec, is missing');
  const support = detect();
  if (!support.available) throw new MemoryCgroupUnavailableError(support.reason);
  let cg: ReturnType<typeof createMemoryCgroup>;
  try {
    cg = createMemoryCgroup(support, options.limitBytes, options.namePrefix ?? 'soup-cap');
  } catch (err) {
    throw new MemoryCgroupUnavailableError(
      `cannot create a memory cgroup with a limit under ${support.parentDir} (` +
        `${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); this needs write access to that cgroup ` +
        `(root, or a delegated subtree)`,
      { cause: err },
    );
  }
  let removed = false;
  try {
    const run = await runChild({
      launch: enterCgroupLaunch(
        { file: program, args: [...(options.args ?? [])], limitMethod: 'none', addressSpaceBytes: null },
        sh,
        cg.dir,
      ),
      ...(options.env ? { env: options.env } : {}),
      ...(options.cwd ? { cwd: options.cwd } : {}),
      timeoutMs: options.timeoutMs ?? 600_000,
      ...(options.input !== undefined ? { input: options.input } : {}),
      ...(options.resultChannel ? { resultChannel: true } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.onSpawn
        ? { onSpawn: (pid: number | undefined) => options.onSpawn!({ pid, cgroupDir: cg.dir }) }
        : {}),
    });
    if (run.exitCode === 125 && /cgroup\.procs/.test(run.stderr)) {
      throw new MemoryCgroupUnavailableError(
        `the child could not enter its cgroup ${cg.dir}: ${tail(run.stderr, 500)}`,
      );
    }
    const counters = readMemoryCgroupCounters(cg.dir, cg.version);
    removed = removeMemoryCgroup(cg.dir);
    return {
      exitCode: run.exitCode,
      signal: run.signal,
      stdout: run.stdout,
      stderr: run.stderr,
      result: run.result,
      timedOut: run.timedOut,
      aborted: run.aborted,
      wallMs: run.wallMs,
      cgroup: {
        version: cg.version,
        dir: cg.dir,
        limitBytes: cg.limitBytes,
        swapLimited: cg.swapLimited,
        ...counters,
        oomKilled: (counters.oomKills ?? 0) > 0,
        removed,
      },
    };
  } finally {
    if (!removed) removeMemoryCgroup(cg.dir);
  }
}
