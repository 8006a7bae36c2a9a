// What a caller that words its own lines needs to keep from supervise()'s events: the steps pushed, the pushes
// that failed and why, how and when the session ended early, and the newest complete checkpoint at the exit.
import type { SuperviseEvent } from './supervise';

/** Why a session ended early, as the caller's own stop or the time limit. */
export type EndReason = 'SIGTERM' | 'SIGINT' | 'time-limit' | 'abort';

/** The session's facts so far (see {@link trackSession}). */
export interface SessionTrack {
  /** Steps pushed and pointed to this session. */
  pushed: number[];
  /** Pushes that failed this session (the newest is retried by the supervisor). */
  unpushed: Array<{ step: number; reason: string }>;
  /** How the session ended early (signal, time limit), and when; null when it did not. */
  ended: { reason: EndReason; afterMs: number } | null;
  /** The newest complete checkpoint when the trainer exited (null: none, or not exited yet). */
  savedStep: number | null;
}

/**
 * The facts, and the listener that fills them (call it from `onEvent` first, then word the event); `into` is a
 * caller's own record that holds them. @default a new record
 */
export function trackSession<T extends SessionTrack>(o: {
  signal: AbortSignal;
  startedAtMs: number;
  into?: T;
}): { track: T | SessionTrack; onEvent: (e: SuperviseEvent) => void } {
  const track: SessionTrack = o.into ?? { pushed: [], unpushed: [], ended: null, savedStep: null };
  const onEvent = (e: SuperviseEvent): void => {
    if (e.type === 'pushed' && e.step !== undefined) track.pushed.push(e.step);
    else if (e.type === 'push-failed')
      track.unpushed.push({
        step: e.step ?? -1,
        reason: e.line.replace(/^push of step \d+ (failed|not pointed to): /, ''),
      });
    else if (e.type === 'stopping')
      track.ended = { reason: endReasonOf(e.reason ?? '', o.signal), afterMs: Date.now() - o.startedAtMs };
    else if (e.type === 'trainer-exited') track.savedStep = e.step ?? null;
  };
  return { track, onEvent };
}

/** A `stopping` event's reason as an EndReason: the time limit, else the signal the caller's abort names. */
export function endReasonOf(reason: string, signal: AbortSignal): EndReason {
  if (reason.startsWith('time limit')) return 'time-limit';
  const sig =
    typeof signal.reason === 'object' && signal.reason !== null
      ? (signal.reason as { signal?: unknown }).signal
      : undefined;
  if (sig === 'SIGTERM' || sig === 'SIGINT') return sig;
  return /SIGTERM/.test(reason) ? 'SIGTERM' : /SIGINT/.test(reason) ? 'SIGINT' : 'abort';
}
