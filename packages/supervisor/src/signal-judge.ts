// The signals that end a session, and when a later one quits at once instead: platforms send several in a row
// (systemd: SIGTERM then SIGHUP; SLURM: SIGUSR1, later SIGTERM), and each sequence is one session end.

/** The signals that end a session when `main` owns the process. */
export const SESSION_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGUSR1', 'SIGUSR2'];

/**
 * The kind of a session signal: SIGINT and SIGTERM are one kind (Ctrl-C and `kill`, a person insisting); SIGHUP,
 * SIGUSR1 and SIGUSR2 are each their own (what a platform sends before or after its SIGTERM).
 */
export function signalKind(sig: NodeJS.Signals): string {
  return sig === 'SIGINT' ? 'SIGTERM' : sig;
}

/** What a signal means now: the session's end begins, it is already ending (one session end), or quit at once. */
export type SignalVerdict = 'end' | 'same-end' | 'quit';

/** Remembers the signals seen; a second signal quits at once only when it is of a kind already received. */
export function createSignalJudge(): { judge(sig: NodeJS.Signals): SignalVerdict; readonly first: string | null } {
  const seen = new Set<string>();
  let first: NodeJS.Signals | null = null;
  return {
    judge(sig) {
      const kind = signalKind(sig);
      if (first === null) {
        first = sig;
        seen.add(kind);
        return 'end';
      }
      if (seen.has(kind)) return 'quit';
      seen.add(kind);
      return 'same-end';
    },
    get first() {
      return first;
    },
  };
}
