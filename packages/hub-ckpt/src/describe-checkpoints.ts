// The results of push, pull, status, list and resume as the sentences a person reads (the records beside them,
// checkpoint-records.ts, are what a machine reads). Colour, and how bytes, durations and local paths read, are the
// caller's: a `style` of plain functions, each plain text by default. Tables come back as rows for the caller to draw.
import type { CheckpointStatus } from './checkpoint-status';
import type { CheckpointList } from './list-checkpoints';
import type { PullResult } from './pull-checkpoint';
import type { PullResumeResult } from './pull-resume';
import type { PushResult } from './push-checkpoint';
import { FINAL_PATH } from './_layout';

/** How the describe functions colour text and write amounts; every function is optional, plain text by default. */
export interface DescribeStyle {
  /** A store's name, a table's header. @default as it is */
  bold: (s: string) => string;
  /** A push's wall time. @default as it is */
  dim: (s: string) => string;
  /** A verified pointer. @default as it is */
  green: (s: string) => string;
  /** What failed: an unverified or invalid pointer, a missing manifest. @default as it is */
  red: (s: string) => string;
  /** Advice: storage only older commits hold. @default as it is */
  yellow: (s: string) => string;
  /** A size in bytes. @default `<n> B` */
  bytes: (n: number) => string;
  /** A wall time in milliseconds. @default `<ms> ms` */
  duration: (ms: number) => string;
  /** A local path (e.g. relative to the working directory). @default as it is */
  path: (p: string) => string;
}

/** One line, or a table: rows of cells, the first the header, for the caller to draw as columns (indented). */
export type DescribedLine = string | { table: string[][] };

const same = (s: string): string => s;
const PLAIN: DescribeStyle = {
  bold: same,
  dim: same,
  green: same,
  red: same,
  yellow: same,
  bytes: (n) => `${n} B`,
  duration: (ms) => `${Math.round(ms)} ms`,
  path: same,
};

const styleOf = (style: Partial<DescribeStyle>): DescribeStyle => ({ ...PLAIN, ...style });

const doesNotExist = (store: string): string => `${store}: does not exist (a first push creates it)`;

/** A push (checkpoint or final) to `store` (its description): what landed, verified, and where the pointer is. */
export function describePush(store: string, r: PushResult, style: Partial<DescribeStyle> = {}): string[] {
  const s = styleOf(style);
  const landed = `${r.fileCount} files, ${s.bytes(r.totalBytes)}, verified`;
  const lines = [
    r.pathInRepo === FINAL_PATH
      ? `pushed final/ (step ${r.step}) to ${store}: ${landed}; latest.json → final (terminal)`
      : `pushed ${r.pathInRepo} to ${store}: ${landed}; latest.json → step ${r.step}  ` +
        s.dim(s.duration(r.timings.totalMs)),
  ];
  if (r.prunedRemote.length || r.prunedLocal.length)
    lines.push(`pruned ${[...r.prunedRemote, ...r.prunedLocal.map(s.path)].join(', ')}`);
  return lines;
}

/** A pull of `pathInRepo` into `dir`: every hash checked. */
export function describePull(
  pathInRepo: string,
  r: PullResult,
  dir: string = r.dir,
  style: Partial<DescribeStyle> = {},
): string {
  const s = styleOf(style);
  return (
    `pulled ${pathInRepo} (step ${r.step}) into ${s.path(dir)}: ${r.fileCount} files, ` +
    `${s.bytes(r.totalBytes)}, every sha256 matches the manifest`
  );
}

/** A store's status: the pointer, the checkpoints (a table), final/, the lease, the storage. */
export function describeStatus(
  st: CheckpointStatus,
  kind: 'hub' | 'dir',
  style: Partial<DescribeStyle> = {},
): DescribedLine[] {
  if (!st.exists) return [doesNotExist(st.store)];
  const s = styleOf(style);
  const p = st.pointer;
  const verified =
    kind === 'hub'
      ? 'verified (LFS files by oid and size; their bytes are hashed when pulled)'
      : 'verified (every byte read back and hashed)';
  const pointerText = p
    ? `step ${p.step} → ${p.path_in_repo}${p.terminal ? ' (terminal)' : ''}, run ${p.run}, ` +
      (st.pointed?.verified
        ? s.green(verified)
        : s.red(`NOT verified: ${(st.pointed?.problems ?? []).slice(0, 3).join('; ')}`)) +
      `, updated ${p.updated_at}`
    : st.hasPointer
      ? s.red(`invalid: ${st.pointerErrors.join('; ')}`)
      : 'none';
  const lines: DescribedLine[] = [s.bold(st.store), `  latest.json  ${pointerText}`];
  const rows = st.checkpoints.map((c) => [
    String(c.step),
    c.pathInRepo,
    String(c.fileCount),
    s.bytes(c.totalBytes),
    c.hasManifest ? 'yes' : s.red('missing'),
  ]);
  if (rows.length) lines.push({ table: [['STEP', 'FOLDER', 'FILES', 'SIZE', 'MANIFEST'], ...rows] });
  lines.push(`  final/       ${st.hasFinal ? 'present' : 'absent'}`);
  const l = st.lease;
  lines.push(
    `  lease        ${l ? `${l.id}: host ${l.host}, pid ${l.pid}, run ${l.run}, until ${l.expires_at}` : 'none'}`,
  );
  // On the Hub, pruned checkpoints stay in history (and in the bill) until the history is squashed.
  if (st.storedBytes !== null) {
    const extra = st.storedBytes - st.treeBytes;
    lines.push(
      `  storage      ${s.bytes(st.storedBytes)} stored (history included), ${s.bytes(st.treeBytes)}` +
        ` in the checkpoints listed` +
        (extra > st.treeBytes
          ? s.yellow(
              `; ${s.bytes(extra)} is only in older commits: pass --squash-history (hub.squash_history) to free it`,
            )
          : ''),
    );
  }
  return lines;
}

/** A store's checkpoints (final/ last) as a table under the store's name (its description), or why there is none. */
export function describeList(store: string, list: CheckpointList, style: Partial<DescribeStyle> = {}): DescribedLine[] {
  if (!list.exists) return [doesNotExist(store)];
  if (list.checkpoints.length === 0) return [`${store}: no checkpoints`];
  const s = styleOf(style);
  const rows = list.checkpoints.map((c) => [
    c.step === null ? 'final' : String(c.step),
    c.pathInRepo,
    String(c.fileCount),
    s.bytes(c.totalBytes),
    c.pushedAt ?? 'unknown',
  ]);
  return [s.bold(store), { table: [['STEP', 'FOLDER', 'FILES', 'SIZE', 'PUSHED'], ...rows] }];
}

/**
 * Where a run resumes: fresh, complete, or the checkpoint resumed from (after one line per checkpoint passed over);
 * `dir` is where it was pulled to, if it was kept.
 */
export function describeResume(
  outcome: PullResumeResult,
  dir: string | null,
  style: Partial<DescribeStyle> = {},
): string[] {
  const s = styleOf(style);
  if (outcome.outcome === 'fresh') {
    const why = outcome.reason === 'repo-missing' ? 'the repo does not exist yet' : 'no checkpoint of this run';
    return [`fresh: ${why}; start from step 0`];
  }
  if (outcome.outcome === 'complete')
    return [
      `complete: ${outcome.pathInRepo} holds the final step ${outcome.step}; nothing to train` +
        `${dir ? ` (pulled into ${s.path(dir)})` : ''}`,
    ];
  const lines = outcome.skipped.map((k) => `skipped ${k.pathInRepo}: ${k.problems.slice(0, 2).join('; ')}`);
  const pointerNote =
    outcome.via === null
      ? ''
      : outcome.repaired
        ? ', latest.json repaired'
        : outcome.previousStep !== null
          ? `; latest.json still names step ${outcome.previousStep} (pass --repair to rewrite it)`
          : '';
  lines.push(
    `resume from ${outcome.pathInRepo} (step ${outcome.step})${outcome.via ? ` via ${outcome.via}` : ''}` +
      `${dir ? `, pulled into ${s.path(dir)}` : ', pulls cleanly'}${pointerNote}`,
  );
  return lines;
}
