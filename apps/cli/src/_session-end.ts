// The end of a session for `soup train`: SIGTERM / SIGINT (main() aborts ctx.signal) or --time-limit.
// The trainer loop asks `check()` before each step. A step runs inside ONNX Runtime without yielding to
// the event loop, so a signal that arrives during step N is handled once step N has completed; `check()`
// yields first, so no step starts after the signal. The step saved is therefore the one running when the
// signal arrived or, when none was (a push, start-up), the last one completed.
import { UsageError } from './errors';
import { parseDuration } from './parse-duration';

/** Why the session ended: the signal's name, `time-limit`, or `abort` (an AbortSignal without a signal name). */
export type SessionEndReason = 'SIGTERM' | 'SIGINT' | 'time-limit' | 'abort';

/** How and when the session ended. */
export interface SessionEnd {
  reason: SessionEndReason;
  /** Milliseconds since the session started. */
  afterMs: number;
}

/** Options of {@link watchSession}. */
export interface WatchSessionOptions {
  /** Aborted by main() on the first SIGTERM / SIGINT (its reason may carry `signal`). */
  signal: AbortSignal;
  /** End the session once this long has passed since `startedAtMs` (checked between steps); null for none. */
  timeLimitMs: number | null;
  /** @default now() */
  startedAtMs?: number;
  /** @default Date.now */
  now?: () => number;
}

/** The loop's view of the session end. */
export interface SessionWatch {
  /**
   * Lets a pending signal or timer reach its handler (a step keeps the event loop busy), then returns
   * the session end if one came. No step may start once this returned non-null.
   */
  check(): Promise<SessionEnd | null>;
  /** The session end seen so far (a signal is seen as soon as its handler runs). */
  readonly ended: SessionEnd | null;
  /** Stops listening. */
  dispose(): void;
}

function signalName(reason: unknown): SessionEndReason {
  const sig = typeof reason === 'object' && reason !== null ? (reason as { signal?: unknown }).signal : reason;
  return sig === 'SIGTERM' || sig === 'SIGINT' ? sig : 'abort';
}

/** Watches `signal` and the time limit for the training loop (see {@link SessionWatch}). */
export function watchSession(opts: WatchSessionOptions): SessionWatch {
  const now = opts.now ?? Date.now;
  const started = opts.startedAtMs ?? now();
  let ended: SessionEnd | null = null;
  const onAbort = (): void => {
    ended ??= { reason: signalName(opts.signal.reason), afterMs: now() - started };
  };
  if (opts.signal.aborted) onAbort();
  else opts.signal.addEventListener('abort', onAbort, { once: true });
  return {
    async check() {
      // A step runs synchronously inside onnxruntime-node: the signal's handler waits for the event loop.
      await new Promise<void>((r) => setImmediate(r));
      if (ended === null && opts.timeLimitMs !== null && now() - started >= opts.timeLimitMs) {
        ended = { reason: 'time-limit', afterMs: now() - started };
      }
      return ended;
    },
    get ended() {
      return ended;
    },
    dispose: () => opts.signal.removeEventListener('abort', onAbort),
  };
}

/**
 * The time limit of this session in ms, from `--time-limit` (wins) or `training.time_limit`; null for none.
 * A flag that is not a duration is a UsageError naming the flag and the accepted forms.
 */
export function resolveTimeLimitMs(flag: unknown, configMs: number | null): number | null {
  if (flag === undefined || flag === null) return configMs;
  const ms = parseDuration(String(flag));
  if (ms === undefined) {
    throw new UsageError(
      `--time-limit ${JSON.stringify(String(flag))} is not a duration: use e.g. 8h45m, 90m, 45s, or a number of seconds`,
    );
  }
  return ms;
}
