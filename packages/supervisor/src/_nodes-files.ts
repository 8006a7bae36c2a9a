// The files the nodes of one run share in the nodes folder (a shared file system, as on a SLURM cluster): small
// JSON files, each written whole by one node (write a temporary name, then rename), read by the others.
import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';

/** `current.json`: the session node 0 started last (followers join it). */
export interface CurrentNote {
  session: string;
  started_at_ms: number;
  host: string;
  pid: number;
}

/** `resume.json`: what node 0 resumed from, so every node resumes from it. */
export interface ResumeNote {
  run: string;
  /** null: a fresh start. */
  step: number | null;
  path_in_repo: string | null;
  /** Node 0's {resume_from} and output folder: a follower with the same output folder uses them as they are. */
  resume_from: string | null;
  /** The pulled checkpoint folder (what {resume_from} is, or holds for a file checkpoint). */
  dir: string | null;
  output_dir: string;
  /** The store already holds the run's final/: nothing to launch. */
  complete: boolean;
}

/** `end-<rank>.json`: that node saw its session end (a signal, its time limit). */
export interface EndNote {
  rank: number;
  reason: string;
}

/** `progress-<rank>.json` and `exit-<rank>.json`: a node's newest complete checkpoint, and how its trainer ended. */
export interface ExitNote {
  rank: number;
  /** Newest complete checkpoint step (null: none). */
  step: number | null;
  /**
   * Exit note: the step this node's trainer last reported reaching (its output's step lines, or its resume step;
   * null: none). In a folder shared with node 0, where rank 0 alone writes, the checkpoint a follower saw complete
   * may predate the step its ranks reached: this is its own evidence.
   */
  reached?: number | null;
  code?: number | null;
  signal?: string | null;
  /** Whether the trainer was stopped for a session end. */
  stopping?: boolean;
}

/** `verdict.json`: node 0's outcome, the run's. */
export interface VerdictNote {
  outcome: string;
  step: number | null;
  reason: string | null;
}

/** The note names of a session folder. */
export type NoteName = 'resume' | 'verdict' | `${'hello' | 'end' | 'progress' | 'exit'}-${number}`;

/** Writes `value` as `<dir>/<name>.json` at once for every reader: a temporary file renamed over it. */
export function writeNote(dir: string, name: NoteName | 'current', value: object): void {
  mkdirSync(dir, { recursive: true });
  const tmp = join(dir, `.${name}.${hostname()}.${process.pid}.tmp`);
  writeFileSync(tmp, `${JSON.stringify({ ...value, at: new Date().toISOString() })}\n`);
  renameSync(tmp, join(dir, `${name}.json`));
}

/** `<dir>/<name>.json`, or null when it is missing or not JSON yet. */
export function readNote<T>(dir: string, name: NoteName | 'current'): T | null {
  try {
    return JSON.parse(readFileSync(join(dir, `${name}.json`), 'utf8')) as T;
  } catch {
    return null;
  }
}

/** The `<kind>-<rank>.json` notes of a session folder, by rank. */
export function readNotes<T>(dir: string, kind: 'end' | 'progress' | 'exit'): Map<number, T> {
  const out = new Map<number, T>();
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    return out;
  }
  for (const n of names) {
    const m = new RegExp(`^${kind}-(\\d+)\\.json$`).exec(n);
    if (!m) continue;
    const v = readNote<T>(dir, `${kind}-${Number(m[1])}`);
    if (v !== null) out.set(Number(m[1]), v);
  }
  return out;
}

/** Resolves after `ms`, or at once when `signal` is aborted. */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
