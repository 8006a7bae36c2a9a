// soup ckpt's human lines: a store's status, and where a run resumes.
import type { CheckpointList, CheckpointStatus, PullResumeResult } from '@soup/hub-ckpt';
import { relative } from 'node:path';
import type { Style } from './_context';
import { renderTable } from './_table';
import { formatBytes } from './format-bytes';

/** `soup ckpt status`'s lines for a store that exists: the pointer, the checkpoints, final/, the storage. */
export function statusLines(st: CheckpointStatus, kind: 'hub' | 'dir', style: Style): string[] {
  const p = st.pointer;
  const lines: string[] = [];
  const pointerText = p
    ? `step ${p.step} → ${p.path_in_repo}${p.terminal ? ' (terminal)' : ''}, run ${p.run}, ` +
      (st.pointed?.verified
        ? style.green(
            kind === 'hub'
              ? 'verified (LFS files by oid and size; their bytes are hashed when pulled)'
              : 'verified (every byte read back and hashed)',
          )
        : style.red(`NOT verified: ${(st.pointed?.problems ?? []).slice(0, 3).join('; ')}`)) +
      `, updated ${p.updated_at}`
    : st.hasPointer
      ? style.red(`invalid: ${st.pointerErrors.join('; ')}`)
      : 'none';
  lines.push(`${style.bold(st.store)}\n  latest.json  ${pointerText}`);
  const rows = [
    ['STEP', 'FOLDER', 'FILES', 'SIZE', 'MANIFEST'],
    ...st.checkpoints.map((c) => [
      String(c.step),
      c.pathInRepo,
      String(c.fileCount),
      formatBytes(c.totalBytes),
      c.hasManifest ? 'yes' : style.red('missing'),
    ]),
  ];
  if (st.checkpoints.length) lines.push(renderTable(rows, style.bold).replace(/^/gm, '  '));
  lines.push(`  final/       ${st.hasFinal ? 'present' : 'absent'}`);
  const l = st.lease;
  lines.push(
    `  lease        ${l ? `${l.id}: host ${l.host}, pid ${l.pid}, run ${l.run}, until ${l.expires_at}` : 'none'}`,
  );
  // On the Hub, pruned checkpoints stay in history (and in the bill) until the history is squashed.
  if (st.storedBytes !== null) {
    const extra = st.storedBytes - st.treeBytes;
    lines.push(
      `  storage      ${formatBytes(st.storedBytes)} stored (history included), ${formatBytes(st.treeBytes)}` +
        ` in the checkpoints listed` +
        (extra > st.treeBytes
          ? style.yellow(
              `; ${formatBytes(extra)} is only in older commits: pass --squash-history (hub.squash_history) to free it`,
            )
          : ''),
    );
  }
  return lines;
}

/** `soup ckpt list`'s lines: a table of the checkpoints (final/ last), or why there is none. */
export function listLines(store: string, list: CheckpointList, style: Style): string[] {
  if (!list.exists) return [`${store}: does not exist (a first push creates it)`];
  if (list.checkpoints.length === 0) return [`${store}: no checkpoints`];
  const rows = [
    ['STEP', 'FOLDER', 'FILES', 'SIZE', 'PUSHED'],
    ...list.checkpoints.map((c) => [
      c.step === null ? 'final' : String(c.step),
      c.pathInRepo,
      String(c.fileCount),
      formatBytes(c.totalBytes),
      c.pushedAt ?? 'unknown',
    ]),
  ];
  return [style.bold(store), renderTable(rows, style.bold).replace(/^/gm, '  ')];
}

/** `soup ckpt resume`'s lines: fresh, complete, or the checkpoint resumed from (and those passed over). */
export function resumeLines(outcome: PullResumeResult, dir: string | null, cwd: string): string[] {
  const lines: string[] = [];
  if (outcome.outcome === 'fresh')
    lines.push(
      `fresh: ${outcome.reason === 'repo-missing' ? 'the repo does not exist yet' : 'no checkpoint of this run'}` +
        `; start from step 0`,
    );
  else if (outcome.outcome === 'complete')
    lines.push(
      `complete: ${outcome.pathInRepo} holds the final step ${outcome.step}; nothing to train` +
        `${dir ? ` (pulled into ${relative(cwd, dir)})` : ''}`,
    );
  else {
    for (const k of outcome.skipped) lines.push(`skipped ${k.pathInRepo}: ${k.problems.slice(0, 2).join('; ')}`);
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
        `${dir ? `, pulled into ${relative(cwd, dir)}` : ', pulls cleanly'}${pointerNote}`,
    );
  }
  return lines;
}
