// The user's trainer as a child process: placeholders, no shell, its own process group, stop with grace.
import { randomBytes } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import { endTree, TREE_TAG_VAR, treeOf, type EndedProcess, type TreeProcess } from './_process-tree';

/** Values of the placeholders; `resumeFrom` null on a fresh run. */
export interface Placeholders {
  /** `{batch_size}`: the micro-batch m when a global batch is given, else the batch size. */
  batchSize: number | null;
  /** `{micro_batch_size}` (m) and `{grad_accum}` (a = G / (m × world size)), with a global batch. @default null */
  microBatchSize?: number | null;
  gradAccum?: number | null;
  outputDir: string;
  resumeFrom: string | null;
  /** The run's horizon (`--horizon`), or null. @default null */
  maxSteps?: number | null;
  /** `{NAME}` → value for the trainer's own levers this session chose (`soup run --try`). @default {} */
  levers?: Record<string, string>;
}

const NAMES = [
  '{batch_size}',
  '{micro_batch_size}',
  '{grad_accum}',
  '{output_dir}',
  '{resume_from}',
  '{max_steps}',
] as const;

/** Placeholders found in an argv (to check `{batch_size}` has a value). */
export function placeholdersIn(argv: readonly string[]): Set<string> {
  return new Set(NAMES.filter((n) => argv.some((a) => a.includes(n))));
}

/**
 * Replaces `{batch_size}`, `{output_dir}` and `{resume_from}` in each argument. On a fresh run
 * (`resumeFrom` null) an argument that is exactly `{resume_from}` is dropped together with the flag
 * before it (`--resume_from_checkpoint {resume_from}` disappears), `--flag={resume_from}` is dropped,
 * and a placeholder inside a longer argument becomes ''.
 */
export function expandArgv(argv: readonly string[], p: Placeholders): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (p.resumeFrom === null) {
      if (a === '{resume_from}') {
        if (out.length > 1 && out[out.length - 1]!.startsWith('-')) out.pop();
        continue;
      }
      if (/^-[^=]*=\{resume_from\}$/.test(a)) continue;
    }
    out.push(
      a
        .replaceAll('{batch_size}', p.batchSize === null ? '' : String(p.batchSize))
        .replaceAll('{micro_batch_size}', p.microBatchSize == null ? '' : String(p.microBatchSize))
        .replaceAll('{grad_accum}', p.gradAccum == null ? '' : String(p.gradAccum))
        .replaceAll('{output_dir}', p.outputDir)
        .replaceAll('{resume_from}', p.resumeFrom ?? '')
        .replaceAll('{max_steps}', p.maxSteps == null ? '' : String(p.maxSteps))
        .replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (whole, name: string) =>
          p.levers && Object.hasOwn(p.levers, name) ? p.levers[name]! : whole,
        ),
    );
  }
  return out;
}

/**
 * The env the trainer gets: the caller's plus SOUP_BATCH_SIZE, SOUP_OUTPUT_DIR, SOUP_RESUME_FROM (and
 * SOUP_MICRO_BATCH_SIZE, SOUP_GRAD_ACCUM with a global batch).
 */
export function trainerEnv(base: NodeJS.ProcessEnv, p: Placeholders): NodeJS.ProcessEnv {
  return {
    ...base,
    SOUP_BATCH_SIZE: p.batchSize === null ? '' : String(p.batchSize),
    SOUP_OUTPUT_DIR: p.outputDir,
    SOUP_RESUME_FROM: p.resumeFrom ?? '',
    ...(p.maxSteps != null ? { SOUP_MAX_STEPS: String(p.maxSteps) } : {}),
    ...(p.microBatchSize != null ? { SOUP_MICRO_BATCH_SIZE: String(p.microBatchSize) } : {}),
    ...(p.gradAccum != null ? { SOUP_GRAD_ACCUM: String(p.gradAccum) } : {}),
  };
}

/** How the trainer ended. */
export interface TrainerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The last lines it wrote on stderr (for the failure message). */
  stderrTail: string[];
  /** The last lines it wrote on stdout (a trainer that logs its error there is judged by them too). */
  stdoutTail: string[];
  /**
   * Processes the trainer started that outlived it, which soup ended (SIGTERM, then SIGKILL). @default []
   */
  leftovers?: EndedProcess[];
  /** Whether some of them still held the trainer's stdout or stderr `pipeGraceMs` after it exited. @default false */
  outputHeld?: boolean;
}

/** A running trainer. */
export interface TrainerChild {
  readonly pid: number;
  readonly exited: Promise<TrainerExit>;
  /** Whether it has exited. */
  readonly done: boolean;
  /** Sends `signal` to its process group (the trainer and whatever it spawned). */
  signal(sig: NodeJS.Signals): void;
  /**
   * Sends the stop signal, waits up to `graceMs`, then SIGKILLs; resolves with how it ended and whether it had to be
   * killed.
   */
  stop(p: { signal: NodeJS.Signals; graceMs: number }): Promise<TrainerExit & { killed: boolean }>;
}

/** Options of {@link startTrainer}. */
export interface StartTrainerOptions {
  argv: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Where the trainer's stdout lines go. */
  onStdout: (chunk: string) => void;
  /** Where the trainer's stderr lines go. */
  onStderr: (chunk: string) => void;
  /**
   * After soup itself dies (even by SIGKILL), a watchdog process sends the trainer's process group
   * SIGTERM, then SIGKILL this long after: no trainer outlives its supervisor. 0 turns it off. @default 3000
   */
  orphanKillMs?: number;
  /**
   * After the trainer exits, how long its output pipes may stay open (held by processes it started) before soup
   * ends its remaining process tree. A stop shortens it to what is left of the stop's grace. @default 120000
   */
  pipeGraceMs?: number;
  /** How often the trainer's descendants are read from /proc, to find those that leave its group. @default 1000 */
  treeScanMs?: number;
}

// The watchdog: reads a pipe from soup; EOF without "done" means soup died, so the trainer goes too.
const WATCHDOG = `
const pgid = Number(process.argv[1]), graceMs = Number(process.argv[2]);
let done = false, fired = false;
for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(s, () => {});
const fire = () => {
  if (fired) return; fired = true;
  if (done) process.exit(0);
  try { process.kill(-pgid, 'SIGTERM'); } catch { process.exit(0); }
  setTimeout(() => { try { process.kill(-pgid, 'SIGKILL'); } catch {} process.exit(0); }, graceMs);
};
process.stdin.on('data', (d) => { if (String(d).includes('done')) done = true; });
process.stdin.on('end', fire);
process.stdin.on('error', fire);
process.stdin.resume();
`;

function startWatchdog(pgid: number, graceMs: number): { release(): void } {
  const dog = spawn(process.execPath, ['-e', WATCHDOG, String(pgid), String(graceMs)], {
    stdio: ['pipe', 'ignore', 'ignore'],
    detached: true,
  });
  dog.on('error', () => {});
  dog.stdin!.on('error', () => {});
  dog.unref();
  (dog.stdin as unknown as { unref?: () => void }).unref?.();
  return {
    release() {
      try {
        dog.stdin!.end('done\n');
      } catch {
        // already gone
      }
    },
  };
}

/** The last 40 non-empty lines of a stream. */
function lineTail(): { add(d: string): void; end(): string[] } {
  const tail: string[] = [];
  let partial = '';
  return {
    add(d) {
      const lines = (partial + d).split('\n');
      partial = lines.pop() ?? '';
      for (const l of lines) if (l.trim() !== '') tail.push(l);
      if (tail.length > 40) tail.splice(0, tail.length - 40);
    },
    end() {
      if (partial.trim() !== '') tail.push(partial);
      partial = '';
      return tail;
    },
  };
}

/** Spawns the trainer (no shell) as the leader of its own process group, so only soup signals it. */
export function startTrainer(opts: StartTrainerOptions): Promise<TrainerChild> {
  const [file, ...args] = opts.argv;
  const tag = randomBytes(8).toString('hex');
  const child: ChildProcess = spawn(file!, args, {
    cwd: opts.cwd,
    env: { ...opts.env, [TREE_TAG_VAR]: tag },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const tail = lineTail();
  const outTail = lineTail();
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    opts.onStdout(d);
    outTail.add(d);
  });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    opts.onStderr(d);
    tail.add(d);
  });
  let done = false;
  // Descendants seen while the trainer runs: one that left its process group (setsid) is found again at its end.
  const seen = new Map<string, TreeProcess>();
  const scan = (): void => {
    if (child.pid === undefined) return;
    for (const t of treeOf(child.pid, child.pid)) seen.set(`${t.pid}:${t.startTicks}`, t);
  };
  const scanTimer = setInterval(scan, opts.treeScanMs ?? 1000);
  scanTimer.unref();
  let pipeDeadline = Number.POSITIVE_INFINITY;
  let reschedule = (): void => {};
  let processExited!: () => void;
  const processGone = new Promise<void>((r) => (processExited = r));
  const exited = new Promise<TrainerExit>((resolve) => {
    let ended = false;
    let pipeTimer: NodeJS.Timeout | undefined;
    // At the trainer's exit: wait for its pipes (at most pipeGraceMs), then end whatever of its tree is left.
    const finish = async (code: number | null, sig: NodeJS.Signals | null, outputHeld: boolean): Promise<void> => {
      if (ended) return;
      ended = true;
      clearTimeout(pipeTimer);
      const leftovers =
        child.pid === undefined
          ? []
          : await endTree({ pgid: child.pid, seen: [...seen.values()], killAfterMs: 1000, tag });
      if (outputHeld) {
        child.stdout!.destroy();
        child.stderr!.destroy();
      }
      done = true;
      resolve({ code, signal: sig, stderrTail: tail.end(), stdoutTail: outTail.end(), leftovers, outputHeld });
    };
    child.on('exit', (code, sig) => {
      clearInterval(scanTimer);
      processExited();
      const exitAt = Date.now();
      reschedule = () => {
        clearTimeout(pipeTimer);
        const waitMs = Math.max(0, Math.min(exitAt + (opts.pipeGraceMs ?? 120_000), pipeDeadline) - Date.now());
        pipeTimer = setTimeout(() => void finish(code, sig, true), waitMs);
      };
      reschedule();
    });
    child.on('close', (code, sig) => void finish(code, sig, false));
  });
  const signal = (sig: NodeJS.Signals): void => {
    if (done || child.pid === undefined) return;
    try {
      process.kill(-child.pid, sig);
    } catch {
      child.kill(sig);
    }
  };
  // If soup itself exits (a second Ctrl-C), the trainer goes with it; if soup is killed, the watchdog sees to it.
  const onExit = (): void => signal('SIGKILL');
  process.on('exit', onExit);
  const orphanKillMs = opts.orphanKillMs ?? 3000;
  const dog = orphanKillMs > 0 && child.pid !== undefined ? startWatchdog(child.pid, orphanKillMs) : null;
  void exited.then(() => {
    process.off('exit', onExit);
    dog?.release();
  });
  return new Promise((resolve, reject) => {
    child.once('error', (err) => {
      clearInterval(scanTimer);
      reject(err);
    });
    child.once('spawn', () =>
      resolve({
        pid: child.pid!,
        exited,
        get done() {
          return done;
        },
        signal,
        async stop({ signal: sig, graceMs }) {
          signal(sig);
          pipeDeadline = Date.now() + graceMs;
          reschedule();
          let timer: NodeJS.Timeout | undefined;
          const timedOut = await Promise.race([
            processGone.then(() => false),
            new Promise<boolean>((r) => (timer = setTimeout(() => r(true), graceMs))),
          ]);
          clearTimeout(timer);
          if (timedOut) signal('SIGKILL');
          return { ...(await exited), killed: timedOut };
        },
      }),
    );
  });
}

/**
 * The error line a trainer raised, judged from its last stderr lines: the last line that names an
 * error or exception, launcher prefixes (`[rank0]:`, `[default0]:`) removed.
 */
export function trainerErrorLine(tail: readonly string[]): string | null {
  const clean = tail.map((l) => l.replace(/^\s*\[(?:rank|default)\d+\]:\s?/, '').trim()).filter((l) => l !== '');
  for (let i = clean.length - 1; i >= 0; i--) {
    if (/^([\w.]+(Error|Exception|Interrupt)\b|Error\b|error:|fatal:)/i.test(clean[i]!)) return clean[i]!;
  }
  return clean.at(-1) ?? null;
}
