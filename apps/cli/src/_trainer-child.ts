// The user's trainer as a child process: placeholders, no shell, its own process group, stop with grace.
import { spawn, type ChildProcess } from 'node:child_process';

/** Values of the placeholders; `resumeFrom` null on a fresh run. */
export interface Placeholders {
  batchSize: number | null;
  outputDir: string;
  resumeFrom: string | null;
}

const NAMES = ['{batch_size}', '{output_dir}', '{resume_from}'] as const;

/** Placeholders found in an argv (to check `{batch_size}` has a value). */
export function placeholdersIn(argv: readonly string[]): Set<(typeof NAMES)[number]> {
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
        .replaceAll('{output_dir}', p.outputDir)
        .replaceAll('{resume_from}', p.resumeFrom ?? ''),
    );
  }
  return out;
}

/** The env the trainer gets: the caller's plus SOUP_BATCH_SIZE, SOUP_OUTPUT_DIR, SOUP_RESUME_FROM. */
export function trainerEnv(base: NodeJS.ProcessEnv, p: Placeholders): NodeJS.ProcessEnv {
  return {
    ...base,
    SOUP_BATCH_SIZE: p.batchSize === null ? '' : String(p.batchSize),
    SOUP_OUTPUT_DIR: p.outputDir,
    SOUP_RESUME_FROM: p.resumeFrom ?? '',
  };
}

/** How the trainer ended. */
export interface TrainerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The last lines it wrote on stderr (for the failure message). */
  stderrTail: string[];
}

/** A running trainer. */
export interface TrainerChild {
  readonly pid: number;
  readonly exited: Promise<TrainerExit>;
  /** Whether it has exited. */
  readonly done: boolean;
  /** Sends `signal` to its process group (the trainer and whatever it spawned). */
  signal(sig: NodeJS.Signals): void;
  /** Sends the stop signal, waits up to `graceMs`, then SIGKILLs; resolves with how it ended and whether it had to be killed. */
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
}

/** Spawns the trainer (no shell) as the leader of its own process group, so only soup signals it. */
export function startTrainer(opts: StartTrainerOptions): Promise<TrainerChild> {
  const [file, ...args] = opts.argv;
  const child: ChildProcess = spawn(file!, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const tail: string[] = [];
  let partial = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => opts.onStdout(d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    opts.onStderr(d);
    const lines = (partial + d).split('\n');
    partial = lines.pop() ?? '';
    for (const l of lines) if (l.trim() !== '') tail.push(l);
    if (tail.length > 40) tail.splice(0, tail.length - 40);
  });
  let done = false;
  const exited = new Promise<TrainerExit>((resolve) => {
    child.on('close', (code, signal) => {
      done = true;
      if (partial.trim() !== '') tail.push(partial);
      resolve({ code, signal, stderrTail: tail });
    });
  });
  const signal = (sig: NodeJS.Signals): void => {
    if (done || child.pid === undefined) return;
    try {
      process.kill(-child.pid, sig);
    } catch {
      child.kill(sig);
    }
  };
  // If soup itself exits (a second Ctrl-C), the trainer goes with it.
  const onExit = (): void => signal('SIGKILL');
  process.on('exit', onExit);
  void exited.then(() => process.off('exit', onExit));
  return new Promise((resolve, reject) => {
    child.once('error', (err) => reject(err));
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
          let timer: NodeJS.Timeout | undefined;
          const timedOut = await Promise.race([exited.then(() => false), new Promise<boolean>((r) => (timer = setTimeout(() => r(true), graceMs)))]);
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
