// Runs one probe child: its own process group, output kept (bounded), an optional JSON result
// on fd 3, SIGKILL to the whole group at the timeout or on abort, optional sampling of the
// peak RSS of the child's whole process tree from /proc.
import { spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import type { Launch } from './_launch';
import { createTreePeak } from './_tree-peak';

export interface RunChildOptions {
  launch: Launch;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  timeoutMs: number;
  /** Written to the child's stdin, then closed. */
  input?: string;
  /** Open fd 3 as a pipe and parse what the child writes there as one JSON value. */
  resultChannel?: boolean;
  signal?: AbortSignal;
  /** Sample the memory of the child's whole process tree every this many ms (0 = never; see `_tree-peak.ts`). */
  peakRssPollMs?: number;
  /**
   * With `peakRssPollMs`: kill the child's process group as soon as a sample exceeds this many bytes
   * (a trial already over its budget cannot fit; running it on only takes host memory).
   */
  killAboveRssBytes?: number;
  /** Keep at most this many characters of stdout and of stderr (the tail). @default 1 MiB */
  maxOutputChars?: number;
  /** Called with each chunk of output as it arrives (all of it, not only the tail kept). */
  onOutput?: (stream: 'stdout' | 'stderr', chunk: string) => void;
  /** Called once with the child's pid (its process group id) right after it is spawned. */
  onSpawn?: (pid: number) => void;
  /**
   * A warm spare: `input` is written at spawn but stdin stays open; the child is not waited for
   * (it does not keep the parent alive) until the gate resolves with the rest of its input, which
   * is then written and stdin closed. The timeout and `wallMs` count from that moment. A gate that
   * resolves `null` drops the spare (its group is killed).
   */
  gate?: Promise<string | null>;
  /**
   * With `resultChannel`: resolve as soon as the child closes fd 3 having written a result with
   * `ok: true`, and SIGKILL its process group then, instead of waiting for it to exit (tearing
   * down a loaded runtime takes tens of milliseconds and measures nothing). The run then has
   * `endedOnResult: true`, `exitCode` null and `signal` null. Any other result, or none, waits for
   * the exit as usual.
   */
  endOnResult?: boolean;
}

export interface ChildRun {
  pid: number | undefined;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Parsed fd 3 payload, when the child wrote valid JSON there. */
  result: unknown;
  /** Why fd 3 could not be parsed, when it had content. */
  resultError?: string;
  timedOut: boolean;
  aborted: boolean;
  wallMs: number;
  /** Epoch ms when the child was spawned, and when it closed (for a breakdown of where a trial's time went). */
  spawnedAt?: number;
  closedAt?: number;
  /** The child's pid and the pids seen in its process tree while sampling (for the kernel log's OOM records). */
  treePids?: Set<number>;
  /** The run was resolved on the child's result (`endOnResult`), before it exited; the child was then killed. */
  endedOnResult?: boolean;
  /** With `endedOnResult`: settles once the killed child has exited and its process group is gone. */
  exited?: Promise<void>;
  /**
   * Time from the first chunk of output (stdout or stderr) to the last, in ms; null when the child
   * printed nothing. Start-up before its first line and exit after its last are not in it: for a
   * trainer that prints as it steps, the time of its steps.
   */
  outputSpanMs?: number | null;
  /** Characters the child printed on stdout and stderr together (a trainer that steps prints more for more steps). */
  outputChars?: number;
  /** Peak RSS of the child's whole process tree while sampling, null when not sampled (or never readable). */
  sampledPeakRssBytes: number | null;
  /** The most processes one sample found in the child's tree (0 when not sampled). */
  sampledProcesses?: number;
  /** The child was killed because a sample exceeded `killAboveRssBytes`. */
  killedAboveRss: boolean;
}

/** When output arrived (performance.now()), over stdout and stderr together: the first and the last chunk. */
interface OutputTimes {
  first: number | null;
  last: number | null;
  /** Characters received over both streams (all of them, not only the tail kept). */
  chars: number;
}

function collect(
  stream: Readable | null | undefined,
  max: number,
  sink: { text: string },
  times: OutputTimes,
  onOutput?: (chunk: string) => void,
): void {
  if (!stream) return;
  stream.setEncoding('utf8');
  stream.on('data', (d: string) => {
    onOutput?.(d);
    const now = performance.now();
    times.first ??= now;
    times.last = now;
    times.chars += d.length;
    sink.text += d;
    if (sink.text.length > max * 2) sink.text = sink.text.slice(-max);
  });
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

function killPid(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

const live = new Set<number>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // A probe child must never outlive the process that started it.
  process.once('exit', () => {
    for (const pid of live) killGroup(pid);
  });
}

export function runChild(opts: RunChildOptions): Promise<ChildRun> {
  // Over 150 lines: one child's lifecycle (spawn, output caps, timeout, abort, exit) on one shared state.
  const max = opts.maxOutputChars ?? 1 << 20;
  let t0 = performance.now();
  let spawnedAt = performance.timeOrigin + t0;
  installExitHook();
  return new Promise((resolve, reject) => {
    // Over 150 lines: the handlers of one child settle this one promise and share its state.
    if (opts.signal?.aborted) {
      reject(opts.signal.reason ?? new Error('aborted'));
      return;
    }
    const child = spawn(opts.launch.file, opts.launch.args, {
      cwd: opts.cwd,
      env: opts.env ?? process.env,
      stdio: opts.resultChannel ? ['pipe', 'pipe', 'pipe', 'pipe'] : ['pipe', 'pipe', 'pipe'],
      detached: true, // own process group: a timeout kills the trainer's helpers too
      windowsHide: true,
    });
    const pid = child.pid;
    if (pid !== undefined) {
      live.add(pid);
      opts.onSpawn?.(pid);
    }
    const out = { text: '' };
    const err = { text: '' };
    const res = { text: '' };
    const times: OutputTimes = { first: null, last: null, chars: 0 };
    const outputSpanMs = (): number | null =>
      times.first === null || times.last === null ? null : times.last - times.first;
    const { onOutput } = opts;
    collect(child.stdout, max, out, times, onOutput && ((d) => onOutput('stdout', d)));
    collect(child.stderr, max, err, times, onOutput && ((d) => onOutput('stderr', d)));
    if (opts.resultChannel) {
      const fd3 = child.stdio[3] as Readable | null;
      fd3?.setEncoding('utf8');
      fd3?.on('data', (d: string) => (res.text += d));
      fd3?.on('error', () => {});
      if (opts.endOnResult) fd3?.on('end', () => onResultEnd());
    }
    child.stdin?.on('error', () => {}); // a child that exits without reading stdin is not our error
    const handles = [child.stdin, child.stdout, child.stderr, child.stdio[3]] as Array<
      { unref?: () => void; ref?: () => void } | null | undefined
    >;
    if (opts.gate) {
      child.stdin?.write(opts.input ?? '');
      child.unref();
      for (const h of handles) h?.unref?.();
    } else child.stdin?.end(opts.input ?? '');

    let timedOut = false;
    let aborted = false;
    let killedAboveRss = false;
    const tree = pid !== undefined ? createTreePeak(pid) : null;
    const seenPids = tree?.pids ?? new Set<number>();
    const sample = (): void => {
      if (tree === null) return;
      tree.sample();
      const peak = tree.peakBytes;
      if (!killedAboveRss && opts.killAboveRssBytes !== undefined && peak !== null && peak > opts.killAboveRssBytes) {
        killedAboveRss = true;
        killGroup(pid);
        // A worker in a group of its own (a launcher's rank) is part of what passed the budget too.
        for (const p of seenPids) killPid(p);
      }
    };
    let poller: ReturnType<typeof setInterval> | undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let closed = false;
    const arm = (): void => {
      poller = opts.peakRssPollMs ? setInterval(sample, opts.peakRssPollMs) : undefined;
      if (opts.peakRssPollMs) sample();
      timer = setTimeout(() => {
        timedOut = true;
        killGroup(pid);
      }, opts.timeoutMs);
    };
    if (opts.gate) {
      opts.gate.then(
        (rest) => {
          if (closed) return;
          if (rest === null) {
            killGroup(pid);
            return;
          }
          child.ref();
          for (const h of handles) h?.ref?.();
          t0 = performance.now();
          spawnedAt = performance.timeOrigin + t0;
          arm();
          child.stdin?.end(rest);
        },
        () => killGroup(pid),
      );
    } else arm();
    const onAbort = (): void => {
      aborted = true;
      killGroup(pid);
    };
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    const cleanup = (): void => {
      closed = true;
      if (timer) clearTimeout(timer);
      if (poller) clearInterval(poller);
      opts.signal?.removeEventListener('abort', onAbort);
      if (pid !== undefined) live.delete(pid);
    };

    child.on('error', (e) => {
      cleanup();
      reject(e);
    });
    let settled = false;
    let markExited!: () => void;
    const exited = new Promise<void>((r) => (markExited = r));
    const parse = (): { result: unknown; resultError?: string } => {
      const raw = res.text.trim();
      if (!raw) return { result: undefined };
      try {
        return { result: JSON.parse(raw) };
      } catch (e) {
        return {
          result: undefined,
          resultError: `result channel held invalid JSON (${(e as Error).message}): ${raw.slice(0, 200)}`,
        };
      }
    };
    // endOnResult: the child closed fd 3 after a successful result — the trial is over.
    const onResultEnd = (): void => {
      if (settled || closed || timedOut || aborted) return;
      const { result } = parse();
      if (!(result && typeof result === 'object' && (result as { ok?: unknown }).ok === true)) return;
      settled = true;
      const closedAt = performance.timeOrigin + performance.now();
      if (timer) clearTimeout(timer);
      if (poller) clearInterval(poller);
      opts.signal?.removeEventListener('abort', onAbort);
      killGroup(pid); // its exit is reaped by the 'close' handler below
      resolve({
        pid,
        exitCode: null,
        signal: null,
        stdout: out.text.slice(-max),
        stderr: err.text.slice(-max),
        result,
        timedOut: false,
        aborted: false,
        wallMs: performance.now() - t0,
        spawnedAt,
        closedAt,
        outputSpanMs: outputSpanMs(),
        outputChars: times.chars,
        sampledPeakRssBytes: tree?.peakBytes ?? null,
        sampledProcesses: tree?.processes ?? 0,
        treePids: seenPids,
        killedAboveRss,
        endedOnResult: true,
        exited,
      });
    };
    child.on('close', (exitCode, signal) => {
      cleanup();
      // Whatever the child left behind in its group goes with it.
      if (pid !== undefined) {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          // group empty: the normal case
        }
      }
      markExited();
      if (settled) return;
      settled = true;
      const { result, resultError } = parse();
      resolve({
        pid,
        exitCode,
        signal,
        stdout: out.text.slice(-max),
        stderr: err.text.slice(-max),
        result,
        ...(resultError ? { resultError } : {}),
        timedOut,
        aborted,
        wallMs: performance.now() - t0,
        spawnedAt,
        closedAt: performance.timeOrigin + performance.now(),
        outputSpanMs: outputSpanMs(),
        outputChars: times.chars,
        sampledPeakRssBytes: tree?.peakBytes ?? null,
        sampledProcesses: tree?.processes ?? 0,
        treePids: seenPids,
        killedAboveRss,
      });
    });
  });
}

/** Last `maxChars` characters of a text, cut at a line start when possible. */
export function tail(text: string, maxChars = 4000): string {
  const t = text.trimEnd();
  if (t.length <= maxChars) return t;
  const cut = t.slice(-maxChars);
  const nl = cut.indexOf('\n');
  return nl >= 0 && nl < 200 ? cut.slice(nl + 1) : cut;
}
