// The micro-batch each session of a run trained with (m × a = G) and its step-downs, as a checkpoint's
// soup_run.json carries them: read from the checkpoint a session resumes from, so the next says what changed.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { OomStepDown } from './run-identity';

/** One session of a run, as a checkpoint's soup_run.json records it. */
export interface MicroSession {
  /** The first step this session trained (1-based). */
  start_step: number;
  micro_batch_size: number;
  grad_accum: number;
  /** Where m came from: config, static, cache, probe. */
  source: string;
  oom_step_downs: OomStepDown[];
}

/** The sessions recorded in `<dir>/soup_run.json` (none when the file or the field is missing). */
export function readMicroSessions(dir: string): MicroSession[] {
  const path = join(dir, 'soup_run.json');
  if (!existsSync(path)) return [];
  try {
    const json = JSON.parse(readFileSync(path, 'utf8')) as { sessions?: unknown };
    return Array.isArray(json.sessions)
      ? (json.sessions as MicroSession[]).filter(
          (s) => Number.isInteger(s?.micro_batch_size) && Number.isInteger(s?.grad_accum),
        )
      : [];
  } catch {
    return [];
  }
}

/** The session before this one as supervise()'s `resolveMicroBatchSize` reports it (`previous`), or null. */
export function previousMicroBatch(
  sessions: readonly MicroSession[],
): { microBatchSize: number; gradAccum: number } | null {
  const last = sessions.at(-1);
  return last ? { microBatchSize: last.micro_batch_size, gradAccum: last.grad_accum } : null;
}
