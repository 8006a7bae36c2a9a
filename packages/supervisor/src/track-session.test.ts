import { describe, expect, it } from 'vitest';
import { endReasonOf, trackSession } from './track-session';

describe('trackSession', () => {
  it('keeps the pushes, the failed pushes with their reason, the end and the saved step', () => {
    const { track, onEvent } = trackSession({ signal: new AbortController().signal, startedAtMs: Date.now() });
    onEvent({ type: 'pushed', level: 'info', line: 'pushed checkpoint-2', step: 2 });
    onEvent({ type: 'push-failed', level: 'warn', line: 'push of step 4 failed: HTTP 503', step: 4 });
    onEvent({ type: 'push-failed', level: 'warn', line: 'push of step 5 not pointed to: changed', step: 5 });
    onEvent({ type: 'stopping', level: 'info', line: 'stopping', reason: 'time limit 4.0s' });
    onEvent({ type: 'trainer-exited', level: 'info', line: 'exited', step: 5 });
    expect(track.pushed).toEqual([2]);
    expect(track.unpushed).toEqual([
      { step: 4, reason: 'HTTP 503' },
      { step: 5, reason: 'changed' },
    ]);
    expect(track.ended?.reason).toBe('time-limit');
    expect(track.ended?.afterMs).toBeGreaterThanOrEqual(0);
    expect(track.savedStep).toBe(5);
  });

  it("names the signal of the caller's abort first, then the one the reason names, else abort", () => {
    const aborted = new AbortController();
    aborted.abort({ signal: 'SIGINT' });
    expect(endReasonOf('signal SIGTERM', aborted.signal)).toBe('SIGINT');
    const none = new AbortController().signal;
    expect(endReasonOf('signal SIGTERM', none)).toBe('SIGTERM');
    expect(endReasonOf('signal SIGINT', none)).toBe('SIGINT');
    expect(endReasonOf('aborted', none)).toBe('abort');
  });
});
