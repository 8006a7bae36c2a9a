// How many warm step sessions soup train's tuner may hold at once. It keeps sessions warm for a
// tie's second timing and times two side by side (timeAlternately); each holds about the memory
// its probe child measured. On a GPU they share the device with each other, so held together they
// must fit the budget the probes were judged by (two sessions near the budget each would run out
// of memory); on the CPU they must fit the host memory this process can reach.
import { reachableMemory } from '@soup/cuda-probe';

/** A fit trial as the micro-batch search records it. */
export interface FitTrial {
  batch_size: number;
  result: string;
  peak_bytes?: number | null;
}

/**
 * The peak of a step at micro-batch `m`, or a bound on it: the smallest peak measured by a fit at
 * `m` or above (a step's memory grows with its micro-batch). Null when no fit at or above `m` was
 * measured.
 */
export function peakAtMost(trials: readonly FitTrial[], m: number): number | null {
  const peaks = trials
    .filter((t) => t.result === 'fit' && t.batch_size >= m && typeof t.peak_bytes === 'number')
    .map((t) => t.peak_bytes as number);
  return peaks.length === 0 ? null : Math.min(...peaks);
}

/**
 * Whether sessions with these peaks may be held at once within `holdBytes`: one alone always (it
 * fits by its probe); two or more only when every peak is known and they sum to at most `holdBytes`.
 */
export function holdable(peaks: readonly (number | null)[], holdBytes: number): boolean {
  if (peaks.length <= 1) return true;
  let sum = 0;
  for (const p of peaks) {
    if (p === null) return false;
    sum += p;
  }
  return sum <= holdBytes;
}

/**
 * What the tuner may hold at once: on CUDA the budget the probes were judged by, and without one
 * nothing beside a single session (what the GPU has free beside the tuner's own sessions is not
 * known, so two are never held at once); on the CPU the host memory this process can reach now
 * (MemAvailable, or a cgroup's headroom when tighter).
 */
export function holdBytesOf(device: 'cpu' | 'cuda', budgetBytes: number | null): number {
  return device === 'cuda' ? (budgetBytes ?? 0) : reachableMemory().bytes;
}

/** A session that can be released (a warm step session, OpenStep's `step`). */
export interface Releasable {
  step: { release(): Promise<void> };
}

/**
 * Warm sessions kept by key (a row's label and m), each with its peak (null: unknown), never more
 * at once than `holdBytes` allows beside the sessions the caller is about to open.
 */
export class KeptSessions<S extends Releasable> {
  private readonly kept = new Map<string, { session: S; peak: number | null }>();

  constructor(readonly holdBytes: number) {}

  get(key: string): S | undefined {
    return this.kept.get(key)?.session;
  }

  /** The keys held now. */
  keys(): string[] {
    return [...this.kept.keys()];
  }

  /** Keeps `session` under `key` (the caller made room for it before opening it). */
  keep(key: string, session: S, peak: number | null): void {
    this.kept.set(key, { session, peak });
  }

  async release(key: string): Promise<void> {
    const s = this.kept.get(key);
    this.kept.delete(key);
    await s?.session.step.release();
  }

  /** Releases every kept session but those in `keys`. */
  async keepOnly(keys: ReadonlySet<string>): Promise<void> {
    for (const k of this.keys()) if (!keys.has(k)) await this.release(k);
  }

  /**
   * Releases kept sessions, the largest peak (or an unknown one) first, until those left fit beside
   * sessions with the peaks `beside`. Those in `spare` are never released: the caller is about to
   * use them, and their peaks are in `beside`.
   */
  async makeRoom(beside: readonly (number | null)[], spare: ReadonlySet<string> = new Set()): Promise<void> {
    const others = (): [string, { peak: number | null }][] => [...this.kept].filter(([k]) => !spare.has(k));
    for (const [k] of others().sort(([, x], [, y]) => (y.peak ?? Infinity) - (x.peak ?? Infinity))) {
      if (holdable([...others().map(([, s]) => s.peak), ...beside], this.holdBytes)) return;
      await this.release(k);
    }
  }

  async releaseAll(): Promise<void> {
    for (const k of this.keys()) await this.release(k);
  }
}
