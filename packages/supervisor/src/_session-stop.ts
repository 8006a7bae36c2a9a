// When a session ends early: the caller's abort signal, or its time limit counted from the session's start.
import { fmt } from './_tell';

/** The session's stop: `stopped` resolves when it must end, and `reason` then says why. */
export interface SessionStop {
  readonly stopped: Promise<void>;
  /** Why the session ends early (`signal SIGTERM`, `time limit 4.0s`); null while it runs on. */
  reason: string | null;
  /** Clears the time limit's timer. */
  clear(): void;
  /** Ends the session now for `reason` (another node's session end), unless it already ends. */
  end(reason: string): void;
}

/** Watches `signal` and the time limit (null: none) of a session that started at `startedAtMs`. */
export function watchStop(p: { signal: AbortSignal; timeLimitMs: number | null; startedAtMs: number }): SessionStop {
  let limitTimer: NodeJS.Timeout | undefined;
  let endNow = (): void => {};
  const stop: SessionStop = {
    reason: null,
    stopped: new Promise<void>((resolveStop) => {
      endNow = resolveStop;
      if (p.signal.aborted) resolveStop();
      p.signal.addEventListener('abort', () => resolveStop(), { once: true });
      const limit = p.timeLimitMs;
      if (limit !== null)
        limitTimer = setTimeout(() => resolveStop(), Math.max(0, limit - (Date.now() - p.startedAtMs)));
    }).then(() => {
      stop.reason ??= p.signal.aborted
        ? `signal${signalName(p.signal.reason)}`
        : `time limit ${fmt(p.timeLimitMs ?? 0)}`;
    }),
    clear: () => clearTimeout(limitTimer),
    end: (reason) => {
      if (stop.reason !== null) return;
      stop.reason = reason;
      endNow();
    },
  };
  return stop;
}

function signalName(reason: unknown): string {
  const sig = typeof reason === 'object' && reason !== null ? (reason as { signal?: unknown }).signal : undefined;
  return typeof sig === 'string' ? ` ${sig}` : '';
}
