// soup train's micro-batch per session: what each session of a run trained with (m × a = G), read
// from the resumed checkpoint's soup_run.json and written into every new one.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { formatMicroBatch } from '@soup/batch-probe';

/** One out-of-memory step-down inside a session. */
export interface OomStepDown {
  /** The optimizer step that failed and was redone. */
  step: number;
  from: number;
  to: number;
  /** The allocation failure's line, as the step raised it. */
  error: string;
}

/** One session of a run, as soup_run.json records it. */
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

/** `micro 4 × 4 = 16 (was 16 × 1 last session)`, or without the part in brackets for a first session or the same m. */
export function describeMicroBatch(
  now: { microBatchSize: number; accumulation: number },
  last: MicroSession | undefined,
): string {
  const text = `micro ${formatMicroBatch(now)}`;
  if (last === undefined || (last.micro_batch_size === now.microBatchSize && last.grad_accum === now.accumulation))
    return text;
  return `${text} (was ${last.micro_batch_size} × ${last.grad_accum} last session)`;
}
