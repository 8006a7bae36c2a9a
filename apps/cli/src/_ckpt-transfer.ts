// soup ckpt's transfers (push, pull, resume) with their progress bars, and a taken --dest worded as a usage error.
import {
  pullCheckpoint,
  pullResumeInto,
  PullTargetExistsError,
  PUSH_PROGRESS_TOTAL,
  trackPushProgress,
  type CheckpointStore,
  type PullResult,
  type PullResumeIntoResult,
  type PushPhaseEvent,
  type PushResult,
} from '@soup/hub-ckpt';
import { resolve } from 'node:path';
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

/** A `--dest` that exists (and no `--force`) is a usage error; other errors pass through. */
const destTaken = (err: unknown, dest: string | null): unknown =>
  err instanceof PullTargetExistsError
    ? new UsageError(`--dest ${dest} already exists: pull into a new path, or pass --force to replace it`, {
        cause: err,
      })
    : err;

/** Pulls `pathInRepo` into `--dest` (hash-checked, `--force` replaces) with a progress bar. */
export async function pullWithProgress(
  s: CheckpointStore,
  opts: { dest: string; force?: boolean },
  ctx: CommandContext,
  pathInRepo: string,
  expectedManifestSha256: string | undefined,
): Promise<PullResult> {
  const bar = ctx.progress({ label: `pull ${pathInRepo}`, unit: 'file', summary: false });
  const pull = () =>
    pullCheckpoint({
      store: s,
      pathInRepo,
      dir: resolve(ctx.cwd, opts.dest),
      overwrite: opts.force === true,
      ...(expectedManifestSha256 ? { expectedManifestSha256 } : {}),
      onFile: (e) => bar.update(e.index + 1, e.name),
    });
  return withProgress(bar, pull, () => 'hashes match').catch((err: unknown) => {
    throw destTaken(err, opts.dest);
  });
}

/** {@link pullResumeInto} `--dest` (else a temp folder, removed) with a progress bar. */
export async function resumeInto(
  s: CheckpointStore,
  ctx: CommandContext,
  p: { run: string; dest: string | null; force: boolean; fallback: boolean; repair: boolean },
): Promise<PullResumeIntoResult> {
  const bar = ctx.progress({ label: 'resume', unit: 'file', summary: false });
  const resume = () =>
    pullResumeInto({
      store: s,
      run: p.run,
      dest: p.dest === null ? null : resolve(ctx.cwd, p.dest),
      overwrite: p.force,
      fallback: p.fallback,
      repair: p.repair,
      signal: ctx.signal,
      logger: { info: (l) => bar.log(l) },
      onFile: (e) => bar.update(e.index + 1, e.name),
    });
  const done = (r: PullResumeIntoResult) => (r.outcome.outcome === 'resume' ? 'hashes match' : r.outcome.outcome);
  return withProgress(bar, resume, done).catch((err: unknown) => {
    throw destTaken(err, p.dest);
  });
}
