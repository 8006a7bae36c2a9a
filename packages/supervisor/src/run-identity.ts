// The identity of a supervised run (`soup run`): the trainer argv with placeholders kept, plus the
// sha256 of each --fingerprint file; kept in the store as soup_run.json next to latest.json.
import { redactArgv, type CheckpointStore } from '@soup/hub-ckpt';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { SupervisorUsageError } from './errors';

/** Where the record lives in the store. */
export const RUN_RECORD_PATH = 'soup_run.json';

/** What a `soup run` fingerprint is made of. */
export interface SupervisedIdentity {
  /**
   * The trainer argv as typed, placeholders kept; a token (or token-shaped value) is kept as `sha256:<hex>`, never as
   * itself.
   */
  argv: string[];
  /** --fingerprint file (as given) → sha256 of its bytes. */
  files: Record<string, string>;
  /**
   * The global batch G (`--global-batch-size`), a hyper-parameter of the run; absent when not given (older records).
   */
  global_batch_size?: number;
}

/** soup_run.json. */
export interface RunRecord {
  format: 'soup-run/1';
  /** The run id every manifest and latest.json carries. */
  run: string;
  identity: SupervisedIdentity;
  /** Fingerprints of changed commands that `--resume force` accepted into this run. */
  accepted: string[];
  /** The batch size the first session resolved (later sessions reuse it), or null. */
  batch_size: number | null;
  /** G, when the run has a global batch. */
  global_batch_size?: number | null;
  /** Each session's micro-batch (m × a = G), its mid-run step-downs and its peak memory, oldest first. */
  sessions?: SupervisedSession[];
  /** Each change of the run's horizon (a run extended, or shortened), oldest first. */
  horizons?: HorizonChange[];
}

/** One change of a run's horizon, as soup_run.json records it. */
export interface HorizonChange {
  /** The horizon the resumed checkpoint was trained toward (its `max_steps`). */
  from: number;
  /** The new horizon. */
  to: number;
  /** The step the run continued from. */
  at_step: number;
  at: string;
}

/** One out-of-memory step-down within a session. */
export interface OomStepDown {
  /** The newest step the trainer had reported (its output or a checkpoint) when it failed. */
  step: number | null;
  /** m before and after. */
  from: number;
  to: number;
  /** The trainer tree's peak memory seen in that launch (bytes), null when not sampled. */
  peak_bytes: number | null;
  /** The out-of-memory line it raised. */
  error: string;
}

/** One session of a run with a global batch, as soup_run.json records it. */
export interface SupervisedSession {
  started_at: string;
  /** The step it resumed from (null: fresh). */
  start_step: number | null;
  /** m and a at the end of the session (after any step-down). */
  micro_batch_size: number;
  grad_accum: number;
  world_size: number;
  /** Where the session's first m came from: flag, cache, probe, tune. */
  source: string;
  /** The trainer's own levers this session's tuner chose (`soup run --try`), when it had any. */
  levers?: Record<string, string>;
  oom_step_downs: OomStepDown[];
  /** The session's peak memory, null when not sampled. */
  memory: SessionMemory | null;
}

/** The peak memory of a session's trainer tree. */
export interface SessionMemory {
  peak_bytes: number | null;
  /** The newest step seen when the peak was sampled (null: before any step). */
  peak_step: number | null;
  budget_bytes: number | null;
  /** budget − peak (negative: over). */
  headroom_bytes: number | null;
  max_memory_bytes: number | null;
  /** The step at which the peak first passed max_memory_bytes (null: never, or before any step). */
  max_memory_passed_step: number | null;
  max_memory_passed: boolean;
  /** `tree-rss` (sum of the tree's VmRSS) or `cuda-per-process`. */
  method: string;
  samples: number;
}

/** `soup-run-<20 hex>` from the identity. */
export function supervisedFingerprint(identity: SupervisedIdentity): string {
  const files = Object.keys(identity.files)
    .sort()
    .map((k) => [k, identity.files[k]]);
  // G joins the fingerprint only when given, so a run without one keeps its old fingerprint.
  const canonical = JSON.stringify(
    identity.global_batch_size !== undefined
      ? { argv: identity.argv, files, global_batch_size: identity.global_batch_size }
      : { argv: identity.argv, files },
  );
  return `soup-run-${createHash('sha256').update(`soup-run/1\n${canonical}`).digest('hex').slice(0, 20)}`;
}

/** Hashes each --fingerprint file; a missing one is a usage error naming it. */
export function identityOf(
  argv: string[],
  fingerprintFiles: string[],
  cwd: string,
  secrets: ReadonlyArray<string | null> = [],
  globalBatchSize: number | null = null,
): SupervisedIdentity {
  const files: Record<string, string> = {};
  for (const f of fingerprintFiles) {
    const abs = resolve(cwd, f);
    let bytes: Buffer;
    try {
      bytes = readFileSync(abs);
    } catch (err) {
      throw new SupervisorUsageError(
        `--fingerprint ${f}: cannot read it (${(err as NodeJS.ErrnoException).code ?? String(err)}` +
          `); pass a file the run depends on, e.g. its config`,
        { field: 'fingerprint', cause: err },
      );
    }
    files[relative(cwd, abs) || f] = createHash('sha256').update(bytes).digest('hex');
  }
  return {
    argv: redactArgv(argv, { secrets, as: 'sha256' }),
    files,
    ...(globalBatchSize !== null ? { global_batch_size: globalBatchSize } : {}),
  };
}

/** What differs between the stored identity and this one, in words (one entry per difference). */
export function describeIdentityChange(before: SupervisedIdentity, after: SupervisedIdentity): string[] {
  const out: string[] = [];
  const a = before.argv;
  const b = after.argv;
  if (JSON.stringify(a) !== JSON.stringify(b)) {
    let i = 0;
    while (i < a.length && i < b.length && a[i] === b[i]) i++;
    out.push(
      `trainer command differs at argument ${i + 1}: ${JSON.stringify(a[i] ?? '(none)')} → ` +
        `${JSON.stringify(b[i] ?? '(none)')}`,
    );
  }
  if (before.global_batch_size !== after.global_batch_size) {
    const g = (v: number | undefined): string => (v === undefined ? 'none' : String(v));
    out.push(
      `--global-batch-size differs: ${g(before.global_batch_size)} → ${g(after.global_batch_size)}` +
        ` (G is a hyper-parameter: a changed G is a changed run)`,
    );
  }
  for (const f of [...new Set([...Object.keys(before.files), ...Object.keys(after.files)])].sort()) {
    const x = before.files[f];
    const y = after.files[f];
    if (x === y) continue;
    if (x === undefined) out.push(`--fingerprint ${f} is new`);
    else if (y === undefined) out.push(`--fingerprint ${f} is no longer given`);
    else out.push(`--fingerprint ${f} changed (sha256 ${x.slice(0, 12)}… → ${y.slice(0, 12)}…)`);
  }
  return out;
}

/** Reads soup_run.json (null when absent or unreadable as a record). */
export async function readRunRecord(store: CheckpointStore): Promise<RunRecord | null> {
  if (!(await store.exists())) return null;
  const raw = await store.readFile({ path: RUN_RECORD_PATH });
  if (raw === null) return null;
  try {
    const v = JSON.parse(new TextDecoder().decode(raw)) as RunRecord;
    if (v.format !== 'soup-run/1' || typeof v.run !== 'string' || !Array.isArray(v.identity?.argv)) return null;
    return {
      ...v,
      // A record an older soup wrote may hold a key in plain text: compared and shown as its sha256 only.
      identity: { ...v.identity, argv: redactArgv(v.identity.argv.map(String), { as: 'sha256' }) },
      accepted: Array.isArray(v.accepted) ? v.accepted : [],
      batch_size: typeof v.batch_size === 'number' ? v.batch_size : null,
      ...(Array.isArray(v.sessions)
        ? {
            sessions: v.sessions.filter(
              (x) => Number.isInteger(x?.micro_batch_size) && Number.isInteger(x?.grad_accum),
            ),
          }
        : {}),
      ...(Array.isArray(v.horizons) ? { horizons: v.horizons.filter((h) => Number.isInteger(h?.to)) } : {}),
    };
  } catch {
    return null;
  }
}

/** Writes soup_run.json in one commit (creating the store when needed). */
export async function writeRunRecord(store: CheckpointStore, record: RunRecord): Promise<void> {
  if (!(await store.exists())) await store.create();
  await store.commit({
    message: `soup: run record ${record.run}`,
    operations: [
      { kind: 'put', path: RUN_RECORD_PATH, bytes: new TextEncoder().encode(`${JSON.stringify(record, null, 2)}\n`) },
    ],
  });
}
