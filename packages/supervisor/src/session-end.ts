// The signal a session's end sends the trainer to ask it to save and stop: one it can be asked to save on.
import { SupervisorUsageError } from './errors';
import { STOP_SIGNALS } from './supervise';

/** A stop signal by name (any case), refused unless it is one a trainer can be asked to save on. */
export function resolveStopSignal(name: string, field = '--stop-signal'): NodeJS.Signals {
  const sig = STOP_SIGNALS.find((s) => s === name.toUpperCase());
  if (sig === undefined)
    throw new SupervisorUsageError(`${field} ${name}: expected one of ${STOP_SIGNALS.join(', ')}`, {
      field: 'stopSignal',
    });
  return sig;
}
