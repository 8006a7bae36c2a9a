// The trainer's memory over the whole session: its process tree sampled every `pollMs` (the
// reading itself is injected, e.g. @soup/cuda-probe's createTreeMemoryReader), the peak kept with
// the newest step seen when it was sampled, and one warning when the peak passes a limit.
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
  /** How sizes read in the warning. @default MiB with one decimal */
  formatBytes?: (bytes: number) => string;
}

/** A session's sampler; a relaunch within the session attaches the new trainer. */
export interface MemoryWatch {
  /** Samples `pid`'s tree until {@link detach}; the launch's own peak starts again from nothing. */
  attach(pid: number): void;
  /** Stops sampling (one last reading first); resolves with this launch's peak (bytes), or null. */
  detach(): Promise<number | null>;
  report(): SessionMemory;
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
    if (max !== null && r.bytes > max && !passed) {
      passed = true;
      passedStep = step;
      p.warn(
        `memory: the trainer's peak passed --max-memory ${fmt(max)} ` +
          `${step === null ? 'before its first reported step' : `at step ${step}`}: ${fmt(r.bytes)} (${o.method})`,
      );
    }
  };
  const loop = (): void => {
    inFlight = sample().finally(() => {
      if (pid !== null) timer = setTimeout(loop, pollMs);
    });
  };
  return {
    attach(next) {
      pid = next;
      launchPeak = null;
      loop();
    },
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
