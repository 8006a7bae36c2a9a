// What each push of a session reads: a snapshot of the checkpoint taken when it was judged complete (so the
// trainer's rotation cannot delete it mid-push), or, where none could be taken, the trainer's folder itself.
import { copyFileSync, linkSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FILE_CHECKPOINT_RECORD } from './resume-supervised';
import { clearSnapshots, snapshotChange, snapshotCheckpoint, type CheckpointSnapshot } from './snapshot-checkpoint';
import { signatureOf, type WatchedCheckpoint } from './watch-checkpoints';
import type { Tell } from './_tell';

/** Thrown from a push's phase: its source changed while it was pushed, so the pointer must not move. */
export class ChangedDuringPush extends Error {}

/** What a push started from: the trainer's checkpoint, its signature then, and the snapshot pushed (if any). */
export interface PushSource {
  source: string;
  sig: string;
  snap: CheckpointSnapshot | null;
}

/** Why a push's source differs from when the push began, or null when it does not. */
export function sourceChange(src: PushSource): string | null {
  if (src.snap !== null) {
    const rel = snapshotChange(src.snap);
    return rel === null ? null : `${rel} was rewritten in place (inode, size or mtime differ from its snapshot)`;
  }
  return signatureOf(src.source).sig === src.sig ? null : 'names, sizes or mtimes differ from when the push began';
}

/** Throws ChangedDuringPush when `src` changed since its push began (see {@link sourceChange}). */
export function assertUnchanged(src: PushSource, show: (path: string) => string): void {
  const why = sourceChange(src);
  if (why === null) return;
  throw new ChangedDuringPush(
    `${show(src.source)} changed while it was pushed (${why}): the pointer stays, and it is pushed again once it ` +
      'settles',
  );
}

/** Staging: a file checkpoint is pushed as a folder holding the file and a record naming it (added to `dirs`). */
function stageCheckpoint(outputDir: string, c: WatchedCheckpoint, dirs: Set<string>): string {
  if (c.kind === 'dir') return c.path;
  const dir = join(outputDir, `.soup-stage-${process.pid}-${c.step}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  try {
    linkSync(c.path, join(dir, c.name));
  } catch {
    copyFileSync(c.path, join(dir, c.name));
  }
  writeFileSync(join(dir, FILE_CHECKPOINT_RECORD), `${JSON.stringify({ file: c.name })}\n`);
  dirs.add(dir);
  return dir;
}

/** The sources of one session's pushes. */
export interface PushSources {
  /** Snapshots `c` at once (else stages it as before, with a warning); returns the folder to push and its source. */
  take(c: WatchedCheckpoint): { dir: string; src: PushSource };
  /** Removes every snapshot not of a step in `keep` above `pushedStep` (pushed, or passed over by a newer one). */
  prune(keep: ReadonlyArray<number | null | undefined>, pushedStep: number): void;
  /** Removes every snapshot and staging folder (the session's end). */
  end(): void;
}

/**
 * The push sources of a session in `outputDir`; snapshots left by a session killed before its cleanup are removed
 * first (the caller holds the output folder's lock: no other session owns them). A follower node (`owner: false`)
 * shares node 0's output folder and pushes nothing: it never clears the snapshots node 0 pushes from.
 */
export function createPushSources(p: {
  outputDir: string;
  copyLimitBytes: number | undefined;
  tell: Tell;
  /** Whether this session owns the folder's snapshots (false on a follower node). @default true */
  owner?: boolean;
}): PushSources {
  const { warn, show } = p.tell;
  const owner = p.owner !== false;
  if (owner) clearSnapshots(p.outputDir);
  const stageDirs = new Set<string>();
  const snaps = new Map<number, CheckpointSnapshot>();
  return {
    take(c) {
      const taken = snapshotCheckpoint({
        outputDir: p.outputDir,
        checkpoint: c,
        ...(p.copyLimitBytes !== undefined ? { copyLimitBytes: p.copyLimitBytes } : {}),
      });
      if (!taken.ok)
        warn(
          `could not snapshot ${show(c.path)} (${taken.why}): pushing it from the trainer's folder, so a rotation ` +
            'that deletes it fails this push',
        );
      const snap = taken.ok ? taken.snapshot : null;
      if (snap !== null) snaps.set(c.step, snap);
      return {
        dir: snap?.dir ?? stageCheckpoint(p.outputDir, c, stageDirs),
        src: { source: c.path, sig: c.signature, snap },
      };
    },
    prune(keep, pushedStep) {
      for (const [step, snap] of snaps) {
        if (keep.includes(step) && step > pushedStep) continue;
        rmSync(snap.dir, { recursive: true, force: true });
        snaps.delete(step);
      }
    },
    end() {
      for (const d of stageDirs) rmSync(d, { recursive: true, force: true });
      if (owner) clearSnapshots(p.outputDir);
      else for (const snap of snaps.values()) rmSync(snap.dir, { recursive: true, force: true });
    },
  };
}
