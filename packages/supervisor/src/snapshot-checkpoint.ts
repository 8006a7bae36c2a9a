// A snapshot of a complete checkpoint, taken the moment it is judged complete, so a trainer's rotation
// (`save_total_limit`: the older folder deleted once a newer one is written) cannot take it from its push.
// Hard links keep the inodes alive after the trainer deletes its folder. They do NOT protect against a trainer
// that rewrites a file in place (same inode): each file's inode, size and mtime are recorded, and a changed one
// makes the snapshot unusable (the push must not move the pointer onto it).
import {
  copyFileSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { FILE_CHECKPOINT_RECORD } from './resume-supervised';

/** The soup-owned folder of snapshots inside the output folder: its `.` keeps it from ever counting as a checkpoint. */
export const SNAPSHOTS_DIR = '.soup-snapshots';

/** Where a hard link cannot be made (another file system, a file system without links), a copy up to this size. */
export const SNAPSHOT_COPY_LIMIT_BYTES = 1024 ** 3;

/** A snapshot taken. */
export interface CheckpointSnapshot {
  step: number;
  /** The folder to push (a file checkpoint: a folder holding the file and {@link FILE_CHECKPOINT_RECORD}). */
  dir: string;
  /** Each file (path relative to `dir`) → `inode:size:mtimeMs`, as the snapshot holds it. */
  files: Map<string, string>;
  /** Files linked and files copied (a copy where a link failed). */
  linked: number;
  copied: number;
}

/** A snapshot, or why none could be taken. */
export type SnapshotResult = { ok: true; snapshot: CheckpointSnapshot } | { ok: false; why: string };

const LINK_REFUSED = new Set(['EXDEV', 'EPERM', 'EMLINK', 'ENOTSUP', 'EOPNOTSUPP', 'EACCES']);

const idOf = (path: string): string => {
  const st = lstatSync(path);
  return `${st.ino}:${st.size}:${st.mtimeMs}`;
};

/**
 * Snapshots checkpoint `c` (as the watcher saw it when judging it complete: `signature`) into
 * `<outputDir>/.soup-snapshots/checkpoint-<step>/`: hard links, else a copy while the copies stay within
 * `copyLimitBytes`. Refused (`ok: false`, nothing left behind) when a file went away, a copy would pass the limit,
 * or the files no longer match `signature` (changed since judged complete).
 */
export function snapshotCheckpoint(p: {
  outputDir: string;
  checkpoint: { step: number; path: string; name: string; kind: 'dir' | 'file'; signature: string };
  /** @default {@link SNAPSHOT_COPY_LIMIT_BYTES} */
  copyLimitBytes?: number;
}): SnapshotResult {
  const c = p.checkpoint;
  const limit = p.copyLimitBytes ?? SNAPSHOT_COPY_LIMIT_BYTES;
  const dir = join(p.outputDir, SNAPSHOTS_DIR, `checkpoint-${c.step}`);
  const snap: CheckpointSnapshot = { step: c.step, dir, files: new Map(), linked: 0, copied: 0 };
  let copiedBytes = 0;
  // The files as the snapshot holds them, in the watcher's signature format (see signatureOf).
  const parts: string[] = [];
  const part = (rel: string, path: string): string => {
    try {
      const st = statSync(path);
      return `${rel}:${st.size}:${st.mtimeMs}`;
    } catch {
      return `${rel}:gone`;
    }
  };
  const take = (from: string, rel: string): void => {
    const to = join(dir, rel);
    const st = lstatSync(from);
    if (st.isDirectory()) {
      mkdirSync(to, { recursive: true });
      for (const name of readdirSync(from).sort()) take(join(from, name), rel === '' ? name : `${rel}/${name}`);
      return;
    }
    try {
      linkSync(from, to);
      snap.linked++;
      parts.push(part(rel, to)); // the same inode as the trainer's file
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? '';
      if (!LINK_REFUSED.has(code)) throw err;
      const before = part(rel, from);
      if (st.isSymbolicLink()) symlinkSync(readlinkSync(from), to);
      else {
        if (copiedBytes + st.size > limit)
          throw new Error(`a hard link failed (${code}) and a copy would pass the ${limit}-byte limit`);
        copyFileSync(from, to);
        copiedBytes += st.size;
        snap.copied++;
      }
      if (part(rel, from) !== before) throw new Error('its files changed after it was judged complete');
      parts.push(before);
    }
    snap.files.set(rel, idOf(to));
  };
  rmSync(dir, { recursive: true, force: true });
  try {
    mkdirSync(dir, { recursive: true });
    if (c.kind === 'dir') take(c.path, '');
    else {
      take(c.path, c.name);
      writeFileSync(join(dir, FILE_CHECKPOINT_RECORD), `${JSON.stringify({ file: c.name })}\n`);
    }
    // The files linked must be the files judged complete: names, sizes and mtimes as the watcher saw them.
    const now = c.kind === 'dir' ? parts.join('|') : (parts[0] ?? '').slice(c.name.length + 1);
    if (now !== c.signature) throw new Error('its files changed after it was judged complete');
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    const e = err as NodeJS.ErrnoException;
    return { ok: false, why: e.code === 'ENOENT' ? 'a file of it was deleted before it could be linked' : e.message };
  }
  return { ok: true, snapshot: snap };
}

/** The first file of `s` whose inode, size or mtime differs from when it was taken (or that is gone); null if none. */
export function snapshotChange(s: CheckpointSnapshot): string | null {
  for (const [rel, id] of s.files) {
    let now: string;
    try {
      now = idOf(join(s.dir, rel));
    } catch {
      return rel;
    }
    if (now !== id) return rel;
  }
  return null;
}

/** Removes every snapshot of `outputDir` (a clean end, or leftovers of a session killed before its cleanup). */
export function clearSnapshots(outputDir: string): void {
  const root = join(outputDir, SNAPSHOTS_DIR);
  try {
    if (!statSync(root).isDirectory()) return;
  } catch {
    return;
  }
  rmSync(root, { recursive: true, force: true });
}
