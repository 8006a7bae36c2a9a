// The trainer's memory over the whole session: its process tree sampled every `pollMs` (the
// reading itself is injected, e.g. @soup/cuda-probe's createTreeMemoryReader), the peak kept with
// the newest step seen when it was sampled, and one warning when the peak passes a limit; with
// `overMax: 'step-down'`, a launch that passes it is told at once (the session stops it and steps down).
import type { SessionMemory } from './run-identity';

/** How the supervisor samples the trainer's memory (see {@link SuperviseOptions.memory}). */
export interface MemoryWatchOptions {
  /** The tree of `pid` now, in bytes; null when it cannot be read. */
  read: (pid: number) => Promise<{ bytes: number } | null>;
  /** What `read` measures, recorded with the peak (e.g. `tree-rss`, `cuda-per-process`). */
  method: string;
  /** @default 250 */
  pollMs?: number;
  /** The memory the trainer may use (the report's headroom is budget − peak). @default null */
  budgetBytes?: number | null;
  /** Warn once, naming the step, when the peak passes this. @default null */
  maxMemoryBytes?: number | null;
  /**
   * What passing `maxMemoryBytes` does: `warn` only, or `step-down`: the launch is stopped at the
   * first sample over it and judged out of memory, so the session steps the micro-batch down as for
   * a raised out-of-memory error (where it can: a global batch, a smaller divisor, a retry left;
   * else it warns). A data-dependent peak passes a one-step probe and reaches the limit steps later.
   * @default 'warn'
   */
  overMax?: 'warn' | 'step-down';
  /** How sizes read in the warning. @default MiB with one decimal */
  formatBytes?: (bytes: number) => string;
}

/** A session's sampler; a relaunch within the session attaches the new trainer. */
export interface MemoryWatch {
  /**
   * Samples `pid`'s tree until {@link detach}; the launch's own peak starts again from nothing.
   * `onOver` (with `overMax: 'step-down'`): called once, at the launch's first sample over the limit.
   */
  attach(pid: number, onOver?: (over: MemoryOver) => void): void;
  /** The launch's first sample over the limit (with `overMax: 'step-down'` and `onOver`), or null. */
  launchOver(): MemoryOver | null;
  /** Stops sampling (one last reading first); resolves with this launch's peak (bytes), or null. */
  detach(): Promise<number | null>;
  report(): SessionMemory;
}

/** A launch's first sample over `maxMemoryBytes`: its size, the newest step seen, and the line that says so. */
export interface MemoryOver {
  bytes: number;
  step: number | null;
  line: string;
}

export function startMemoryWatch(
  o: MemoryWatchOptions,
  p: { stepNow: () => number | null; warn: (line: string) => void },
): MemoryWatch {
  const pollMs = o.pollMs ?? 250;
  const fmt = o.formatBytes ?? ((n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`);
  let peak: number | null = null;
  let peakStep: number | null = null;
  let launchPeak: number | null = null;
  let passed = false;
  let passedStep: number | null = null;
  let samples = 0;
  let pid: number | null = null;
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> = Promise.resolve();
  let onOver: ((over: MemoryOver) => void) | undefined;
  let over: MemoryOver | null = null;

  const sample = async (): Promise<void> => {
    if (pid === null) return;
    const r = await o.read(pid).catch(() => null);
    if (r === null) return;
    samples += 1;
    const step = p.stepNow();
    if (launchPeak === null || r.bytes > launchPeak) launchPeak = r.bytes;
    if (peak === null || r.bytes > peak) {
      peak = r.bytes;
      peakStep = step;
    }
    const max = o.maxMemoryBytes ?? null;
    if (max === null || r.bytes <= max) return;
    const where = step === null ? 'before its first reported step' : `at step ${step}`;
    const line = `memory: the trainer's peak passed --max-memory ${fmt(max)} ${where}: ${fmt(r.bytes)} (${o.method})`;
    const first = !passed;
    if (first) [passed, passedStep] = [true, step];
    if (o.overMax === 'step-down' && onOver && over === null) {
      over = { bytes: r.bytes, step, line: `its memory passed --max-memory ${fmt(max)} ${where}: ${fmt(r.bytes)}` };
      p.warn(line);
      onOver(over);
    } else if (first) p.warn(line);
  };
  const loop = (): void => {
    inFlight = sample().finally(() => {
      if (pid !== null) timer = setTimeout(loop, pollMs);
    });
  };
  return {
    attach(next, tell) {
      pid = next;
      launchPeak = null;
      [onOver, over] = [tell, null];
      loop();
    },
    launchOver: () => over,
    async detach() {
      clearTimeout(timer);
      await inFlight;
      await sample();
      pid = null;
      clearTimeout(timer);
      return launchPeak;
    },
    report() {
      const budget = o.budgetBytes ?? null;
      return {
        peak_bytes: peak,
        peak_step: peakStep,
        budget_bytes: budget,
        headroom_bytes: budget !== null && peak !== null ? budget - peak : null,
        max_memory_bytes: o.maxMemoryBytes ?? null,
        max_memory_passed: passed,
        max_memory_passed_step: passedStep,
        method: o.method,
        samples,
      };
    },
  };
}
