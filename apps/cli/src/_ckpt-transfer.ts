// soup ckpt's transfers (push, pull, resume) with their progress bars.
import {
  PullTargetExistsError,
  PUSH_PROGRESS_TOTAL,
  trackPushProgress,
  type PushPhaseEvent,
  type PushResult,
} from '@soup/hub-ckpt';
import type { CommandContext } from './_context';
import { UsageError } from './errors';
import { formatBytes } from './format-bytes';
import { withProgress } from '@soup/progress';

/** Runs one push (checkpoint or final) with a progress bar over its phases. */
export async function pushWithProgress(
  ctx: CommandContext,
  label: string,
  fn: (onPhase: (e: PushPhaseEvent) => void) => Promise<PushResult>,
): Promise<PushResult> {
  const bar = ctx.progress({ label, total: PUSH_PROGRESS_TOTAL, unit: 'phase', summary: false });
  const track = trackPushProgress();
  const push = () =>
    fn((e) => {
      const at = track(e);
      bar.update(at.done, at.status);
    });
  return withProgress(bar, push, (r) => `${r.fileCount} files, ${formatBytes(r.totalBytes)}, verified`);
}

/** What a pull reports as it goes: the command's signal, its log lines and each file checked, on one progress bar. */
export interface FileBarIo {
  signal: AbortSignal;
  logger: { info: (line: string) => void };
  onFile: (e: { index: number; name: string }) => void;
}

/**
 * Runs a pull (or a resume) with a progress bar over its files; `done` says how it ended. A `--dest` (as typed) that
 * exists without `--force` is refused in the flags' words.
 */
export async function withFileBar<T>(
  ctx: CommandContext,
  label: string,
  fn: (io: FileBarIo) => Promise<T>,
  done: (r: T) => string,
  dest?: string,
): Promise<T> {
  const bar = ctx.progress({ label, unit: 'file', summary: false });
  const io: FileBarIo = {
    signal: ctx.signal,
    logger: { info: (l) => bar.log(l) },
    onFile: (e) => bar.update(e.index + 1, e.name),
  };
  return withProgress(bar, () => fn(io), done).catch((err: unknown) => {
    if (!(err instanceof PullTargetExistsError)) throw err;
    throw new UsageError(`--dest ${dest} already exists: pull into a new path, or pass --force to replace it`, {
      cause: err,
    });
  });
}
