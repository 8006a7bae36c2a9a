// Watching a trainer's output folder for checkpoints, and deciding when one is complete and this run's.
import { type Dirent, readdirSync, statSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { isWholeZip } from './whole-zip';

/** Options of {@link createCheckpointWatcher}. */
export interface CheckpointWatcherOptions {
  /** The trainer's output folder ({output_dir}). */
  dir: string;
  /** Which entries of `dir` are checkpoints (`*` and `?` wildcards, no `/`). @default 'checkpoint-*' */
  glob?: string;
  /** Pulls the step out of an entry's name: the first capture group. @default the last number in the name */
  stepRegex?: RegExp;
  /** File a checkpoint folder must hold to count ('' for none). @default 'trainer_state.json' */
  completeFile?: string;
  /** A checkpoint unchanged this long is complete. */
  settleMs: number;
}

/** One checkpoint the watcher sees. */
export interface WatchedCheckpoint {
  step: number;
  /** Absolute path of the folder (or file). */
  path: string;
  name: string;
  kind: 'dir' | 'file';
  /** Whether `completeFile` is there (false for a file, and for a folder when `completeFile` is ''). */
  marker: boolean;
  /** Since when (ms, the `now` of `scan`) its file list, sizes and mtimes have not changed. */
  stableSinceMs: number;
  /** File list, sizes and mtimes, as one string. */
  signature: string;
  /** Whether it appeared or changed after {@link CheckpointWatcher.markLaunch} (or is the one soup pulled). */
  thisRun: boolean;
}

/** Why a checkpoint counts as complete. */
export type CompleteReason = 'settled' | 'newer-appeared' | 'trainer-exited';

/** Tracks checkpoint entries across scans. */
export interface CheckpointWatcher {
  /**
   * Records what is there now: entries present at launch (and unchanged since) are never this run's,
   * except `pulled` (the checkpoint soup pulled for this session). Returns the leftovers, oldest first.
   */
  markLaunch(p?: { pulled?: string | null }): WatchedCheckpoint[];
  /** Reads the folder (at time `nowMs`) and returns every checkpoint entry, oldest step first. */
  scan(nowMs: number): WatchedCheckpoint[];
  /**
   * The newest complete checkpoint of this run as of the last scan. A folder with its marker file is
   * complete once unchanged for `settleMs` as of `asOfMs`, or once an entry with a higher step exists,
   * or once the trainer exited by itself (`trainerExited`). Without a marker (a file checkpoint, or
   * `completeFile: ''`) only settling counts, measured at `asOfMs`: a trainer's exit proves nothing, except
   * for a file checkpoint that is a whole zip archive (torch.save, Lightning), see {@link isWholeZip}.
   */
  newestComplete(p: {
    asOfMs: number;
    trainerExited: boolean;
    /** Only checkpoints at or below this step (what every node reached). @default no bound */
    atMost?: number;
  }): { checkpoint: WatchedCheckpoint; reason: CompleteReason } | null;
  /**
   * Whether the top-level file `name` of the output folder is this run's: it appeared or changed (inode, size,
   * mtime) after {@link markLaunch}. A file an earlier run left there unchanged is not; true before markLaunch.
   */
  isThisRunsFile(name: string): boolean;
  /** The oldest complete checkpoint of this run with a step above `afterStep` (the rule of {@link newestComplete}). */
  oldestCompleteAfter(
    afterStep: number,
    p: { asOfMs: number; trainerExited: boolean },
  ): { checkpoint: WatchedCheckpoint; reason: CompleteReason } | null;
}

/** `*` / `?` glob → anchored regex on one name. */
export function globToRegExp(glob: string): RegExp {
  const body = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${body}$`);
}

/** The step of a name: the regex's first group, or the last run of digits. */
export function stepOfName(name: string, re?: RegExp): number | null {
  const m = re ? re.exec(name) : /(\d+)(?!.*\d)/.exec(name);
  const digits = m?.[1] ?? (re ? m?.[0] : undefined);
  if (digits === undefined || !/^\d+$/.test(digits)) return null;
  const n = Number(digits);
  return Number.isSafeInteger(n) ? n : null;
}

/** A folder's (or file's) file list, sizes and mtimes as one string, and its newest mtime. */
export function signatureOf(path: string, st?: Stats): { sig: string; newestMtimeMs: number } {
  let s0: Stats;
  try {
    s0 = st ?? statSync(path);
  } catch {
    return { sig: 'gone', newestMtimeMs: 0 };
  }
  if (!s0.isDirectory()) return { sig: `${s0.size}:${s0.mtimeMs}`, newestMtimeMs: s0.mtimeMs };
  const parts: string[] = [];
  let newest = s0.mtimeMs;
  const walk = (dir: string, rel: string): void => {
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      parts.push(`${rel}:gone`);
      return;
    }
    for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const p = join(dir, e.name);
      try {
        const s = statSync(p);
        newest = Math.max(newest, s.mtimeMs);
        if (s.isDirectory()) walk(p, `${rel}${e.name}/`);
        else parts.push(`${rel}${e.name}:${s.size}:${s.mtimeMs}`);
      } catch {
        parts.push(`${rel}${e.name}:gone`);
      }
    }
  };
  walk(path, '');
  return { sig: parts.join('|'), newestMtimeMs: newest };
}

/**
 * Watches `{output_dir}` by polling (the caller calls `scan`): each checkpoint's file list, sizes and
 * modification times make its signature; a signature that has not changed for `settleMs` is settled.
 * Entries whose name starts with `.` (temp folders) are ignored.
 */
export function createCheckpointWatcher(opts: CheckpointWatcherOptions): CheckpointWatcher {
  const match = globToRegExp(opts.glob ?? 'checkpoint-*');
  const marker = opts.completeFile ?? 'trainer_state.json';
  const seen = new Map<string, { sig: string; stableSinceMs: number }>();
  // name → signature at launch (null before markLaunch: everything counts, as a library caller may want).
  let atLaunch: Map<string, string> | null = null;
  let pulled: string | null = null;
  let last: WatchedCheckpoint[] = [];
  // Top-level file name → inode, size and mtime at launch (null before markLaunch).
  let filesAtLaunch: Map<string, string> | null = null;
  const fileSig = (name: string): string | null => {
    try {
      const st = statSync(join(opts.dir, name));
      return st.isFile() ? `${st.ino}:${st.size}:${st.mtimeMs}` : null;
    } catch {
      return null;
    }
  };

  const read = (nowMs: number, track: boolean): WatchedCheckpoint[] => {
    let names: string[];
    try {
      names = readdirSync(opts.dir);
    } catch {
      names = [];
    }
    const out: WatchedCheckpoint[] = [];
    const present = new Set<string>();
    for (const name of names) {
      if (name.startsWith('.') || !match.test(name)) continue;
      const step = stepOfName(name, opts.stepRegex);
      if (step === null) continue;
      const path = join(opts.dir, name);
      let st: Stats;
      try {
        st = statSync(path);
      } catch {
        continue;
      }
      const kind = st.isDirectory() ? 'dir' : 'file';
      // The marker before the signature: a signature read first could predate the marker, and the push would
      // then find the folder "changed" although it was complete. An empty marker is still being written.
      let hasMarker = false;
      if (kind === 'dir' && marker !== '') {
        try {
          const m = statSync(join(path, marker));
          hasMarker = m.isFile() && m.size > 0;
        } catch {
          hasMarker = false;
        }
      }
      const { sig, newestMtimeMs } = signatureOf(path, st);
      present.add(name);
      const prev = seen.get(name);
      // First sight: it has been stable at least since its newest mtime.
      const stableSinceMs =
        prev && prev.sig === sig ? prev.stableSinceMs : prev ? nowMs : Math.min(nowMs, newestMtimeMs);
      if (track) seen.set(name, { sig, stableSinceMs });
      const thisRun = atLaunch === null || name === pulled || atLaunch.get(name) !== sig;
      out.push({ step, path, name, kind, marker: hasMarker, stableSinceMs, signature: sig, thisRun });
    }
    if (track) for (const k of [...seen.keys()]) if (!present.has(k)) seen.delete(k);
    return out.sort((a, b) => a.step - b.step);
  };

  const completeReason = (
    c: WatchedCheckpoint,
    maxStep: number,
    asOfMs: number,
    trainerExited: boolean,
  ): CompleteReason | null => {
    const settled = asOfMs - c.stableSinceMs >= opts.settleMs;
    if (c.kind === 'dir' && marker !== '') {
      if (!c.marker) return null;
      if (trainerExited) return 'trainer-exited';
      if (c.step < maxStep) return 'newer-appeared';
      return settled ? 'settled' : null;
    }
    if (settled) return 'settled';
    // torch.save / Lightning: a zip whose end record is in place was written to its end.
    if (trainerExited && c.kind === 'file' && isWholeZip(c.path)) return 'trainer-exited';
    return null;
  };

  return {
    markLaunch(p = {}) {
      pulled = p.pulled ?? null;
      const now = Date.now();
      const all = read(now, true);
      atLaunch = new Map(all.map((c) => [c.name, c.signature]));
      filesAtLaunch = new Map();
      let names: string[] = [];
      try {
        names = readdirSync(opts.dir);
      } catch {
        names = [];
      }
      for (const name of names) {
        const sig = fileSig(name);
        if (sig !== null) filesAtLaunch.set(name, sig);
      }
      last = read(now, false);
      return last.filter((c) => !c.thisRun);
    },
    isThisRunsFile(name) {
      if (filesAtLaunch === null) return true;
      const now = fileSig(name);
      return now !== null && filesAtLaunch.get(name) !== now;
    },
    scan(nowMs) {
      last = read(nowMs, true);
      return last;
    },
    newestComplete({ asOfMs, trainerExited, atMost = Number.POSITIVE_INFINITY }) {
      const mine = last.filter((c) => c.thisRun);
      const maxStep = mine.reduce((m, c) => Math.max(m, c.step), -1);
      for (let i = mine.length - 1; i >= 0; i--) {
        if (mine[i]!.step > atMost) continue;
        const reason = completeReason(mine[i]!, maxStep, asOfMs, trainerExited);
        if (reason !== null) return { checkpoint: mine[i]!, reason };
      }
      return null;
    },
    oldestCompleteAfter(afterStep, { asOfMs, trainerExited }) {
      const mine = last.filter((c) => c.thisRun);
      const maxStep = mine.reduce((m, c) => Math.max(m, c.step), -1);
      for (const c of mine) {
        if (c.step <= afterStep) continue;
        const reason = completeReason(c, maxStep, asOfMs, trainerExited);
        if (reason !== null) return { checkpoint: c, reason };
      }
      return null;
    },
  };
}
