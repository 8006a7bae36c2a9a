// soup ckpt's transfers (push, pull, resume) with their progress bars, and a taken --dest worded as a usage error.
import {
  pullCheckpoint,
  pullResumeInto,
  PullTargetExistsError,
  type CheckpointStore,
  type PullResult,
  type PullResumeIntoResult,
  type PushResult,
} from '@soup/hub-ckpt';
import { resolve } from 'node:path';
import type { CommandContext } from './_context';
import { UsageError } from './errors';
import { formatBytes } from './format-bytes';

const PHASES: Record<string, [number, string]> = {
  hash: [0, 'hashing'],
  upload: [1, 'uploading'],
  uploaded: [2, 'verifying from the store'],
  verified: [3, 'moving latest.json'],
  pointer: [3, 'moving latest.json'],
  pointed: [4, 'pruning'],
  prune: [4, 'pruning'],
  done: [5, 'done'],
};

/** Runs one push (checkpoint or final) with a progress bar over its phases. */
export async function pushWithProgress(
  ctx: CommandContext,
  label: string,
  fn: (onPhase: (e: { phase: string; path?: string }) => void) => Promise<PushResult>,
): Promise<PushResult> {
  const bar = ctx.progress({ label, total: 5, unit: 'phase', summary: false });
  let uploads = 0;
  try {
    const r = await fn((e) => {
      if (e.phase === 'upload') uploads += 1;
      const [n, word] = PHASES[e.phase] ?? [0, e.phase];
      bar.update(n, e.phase === 'upload' ? `${word} (${uploads} landed)` : word);
    });
    bar.done(`${r.fileCount} files, ${formatBytes(r.totalBytes)}, verified`);
    return r;
  } catch (err) {
    bar.fail();
    throw err;
  }
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
  try {
    const r = await pullCheckpoint({
      store: s,
      pathInRepo,
      dir: resolve(ctx.cwd, opts.dest),
      overwrite: opts.force === true,
      ...(expectedManifestSha256 ? { expectedManifestSha256 } : {}),
      onFile: (e) => bar.update(e.index + 1, e.name),
    });
    bar.done('hashes match');
    return r;
  } catch (err) {
    bar.fail();
    throw destTaken(err, opts.dest);
  }
}

/** {@link pullResumeInto} `--dest` (else a temp folder, removed) with a progress bar. */
export async function resumeInto(
  s: CheckpointStore,
  ctx: CommandContext,
  p: { run: string; dest: string | null; force: boolean; fallback: boolean; repair: boolean },
): Promise<PullResumeIntoResult> {
  const bar = ctx.progress({ label: 'resume', unit: 'file', summary: false });
  try {
    const r = await pullResumeInto({
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
    bar.done(r.outcome.outcome === 'resume' ? 'hashes match' : r.outcome.outcome);
    return r;
  } catch (err) {
    bar.fail();
    throw destTaken(err, p.dest);
  }
}
