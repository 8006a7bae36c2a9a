// How the session speaks: events for the caller, and the small formatters its sentences use.
import { relative } from 'node:path';
import type { SuperviseEvent, SuperviseTopic, SessionOptions } from './supervise-options';

/** The session's voice: `emit` any event, `say` an info line, `warn` a warning, `show` a path as a person reads it. */
export interface Tell {
  emit: (type: SuperviseEvent['type'], line: string, extra?: Partial<SuperviseEvent>) => void;
  say: (line: string, topic?: SuperviseTopic) => void;
  warn: (line: string, topic?: SuperviseTopic) => void;
  show: (p: string) => string;
}

/** The voice of one session: events go to `o.onEvent`, paths read relative to `o.cwd`. */
export function createTell(o: Pick<SessionOptions, 'onEvent' | 'cwd'>): Tell {
  const emit: Tell['emit'] = (type, line, extra = {}) =>
    o.onEvent?.({
      type,
      level: type === 'warning' || type === 'push-failed' || type === 'leftovers' ? 'warn' : 'info',
      line,
      ...extra,
    });
  return {
    emit,
    say: (line, topic) => emit('info', line, topic ? { topic } : {}),
    warn: (line, topic) => emit('warning', line, topic ? { topic } : {}),
    show: (p) => relative(o.cwd, p) || '.',
  };
}

/** An argv word as a shell reader expects it: quoted when it holds whitespace or is empty. */
export const q = (a: string): string => (/\s/.test(a) || a === '' ? JSON.stringify(a) : a);

/** A duration for a person: `4.0s`, `12m05s`, `2h03m`. */
export function fmt(ms: number): string {
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.round(ms / 1000);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return h > 0 ? `${h}h${String(m).padStart(2, '0')}m` : `${m}m${String(s % 60).padStart(2, '0')}s`;
}

/** `4 × 4 = 16`, or `4 × 4 × 2 ranks = 32` with a world size. */
export function microBatchText(m: number, gradAccum: number, worldSize = 1): string {
  const g = m * gradAccum * worldSize;
  return worldSize === 1 ? `${m} × ${gradAccum} = ${g}` : `${m} × ${gradAccum} × ${worldSize} ranks = ${g}`;
}

/** {@link microBatchText} from m and G: the accumulation is what makes up G. */
export function microShape(m: number, G: number, worldSize: number): string {
  return microBatchText(m, G / (m * worldSize), worldSize);
}
