import {
  checkpointStatus,
  ChecksumError,
  CorruptCheckpointError,
  listCheckpoints,
  listRecord,
  localCheckpointStep,
  pullRecord,
  openCheckpointStore,
  pushCheckpoint,
  pushFinal,
  pushRecord,
  resumeRecord,
  statusRecord,
  StoreMissingError,
  type CheckpointStore,
  type PullResult,
} from '@soup/hub-ckpt';
import { statSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { listLines, resumeLines, statusLines } from '../_ckpt-lines';
import { pullWithProgress, pushWithProgress, resumeInto } from '../_ckpt-transfer';
import type { CommandContext } from '../_context';
import { explainRefusal } from '../_refusal';
import { showStoredLossPlot } from '../_stored-plot';
import { PullIntegrityError, UsageError } from '../errors';
import { formatBytes } from '../format-bytes';
import { formatDuration } from '@soup/progress';
import type {
  CkptFinalOptions,
  CkptPullOptions,
  CkptPushOptions,
  CkptRepoOptions,
  CkptResumeOptions,
  CkptStatusOptions,
} from './ckpt.options';

function store(
  opts: CkptRepoOptions & { public?: boolean },
  ctx: CommandContext,
  needsWrite: boolean,
): CheckpointStore {
  return openCheckpointStore({
    repo: opts.repo,
    repoType: opts.repoType,
    private: !opts.public,
    endpoint: null,
    needsWrite,
    env: ctx.env,
    cwd: ctx.cwd,
    warn: (line) => ctx.warn(line),
  });
}

/** `<dir>` as an absolute folder, and its step: `--step`, else what its trainer_state.json says. */
function checkpointDir(ctx: CommandContext, shown: string, step: number | undefined): { dir: string; step: number } {
  const dir = resolve(ctx.cwd, shown);
  let isDir = false;
  try {
    isDir = statSync(dir).isDirectory();
  } catch {
    // no such folder, or not one this user can see
  }
  if (!isDir) throw new UsageError(`${shown} is not a checkpoint folder (no such directory)`);
  const found = step ?? localCheckpointStep({ dir });
  if (found === null) throw new UsageError(`${shown} has no trainer_state.json with a global_step: pass --step N`);
  return { dir, step: found };
}

/** `soup ckpt push <dir> [--step N] --repo R --run ID`. */
export async function runPush(opts: CkptPushOptions, ctx: CommandContext, args: string[]): Promise<void> {
  const { dir, step } = checkpointDir(ctx, args[0]!, opts.step);
  const s = store(opts, ctx, true);
  const r = await pushWithProgress(ctx, `push checkpoint-${step}`, (onPhase) =>
    pushCheckpoint({
      store: s,
      step,
      dir,
      run: opts.run,
      keepLocal: opts.keepLocal ?? Infinity,
      keepRemote: opts.keepRemote,
      force: opts.force === true,
      onPhase,
    }),
  );
  ctx.emit({ ok: true, store: s.description, ...pushRecord(r) });
  ctx.say(
    `pushed ${r.pathInRepo} to ${s.description}: ${r.fileCount} files, ${formatBytes(r.totalBytes)}` +
      `, verified; latest.json → step ${r.step}  ${ctx.style.dim(formatDuration(r.timings.totalMs))}`,
  );
  if (r.prunedRemote.length || r.prunedLocal.length)
    ctx.say(`pruned ${[...r.prunedRemote, ...r.prunedLocal.map((p) => relative(ctx.cwd, p) || p)].join(', ')}`);
}

/** `soup ckpt final <dir> --repo R --run ID`. */
export async function runFinal(opts: CkptFinalOptions, ctx: CommandContext, args: string[]): Promise<void> {
  const { dir, step } = checkpointDir(ctx, args[0]!, opts.step);
  const s = store(opts, ctx, true);
  const r = await pushWithProgress(ctx, 'push final', (onPhase) =>
    pushFinal({ store: s, step, dir, run: opts.run, force: opts.force === true, onPhase }),
  );
  ctx.emit({ ok: true, store: s.description, terminal: true, ...pushRecord(r) });
  ctx.say(
    `pushed final/ (step ${r.step}) to ${s.description}: ${r.fileCount} files, ${formatBytes(r.totalBytes)}` +
      `, verified; latest.json → final (terminal)`,
  );
}

/** `soup ckpt status --repo R`. */
export async function runStatus(opts: CkptStatusOptions, ctx: CommandContext): Promise<void> {
  const s = store(opts, ctx, false);
  const st = await checkpointStatus({ store: s, verify: true });
  ctx.emit(statusRecord(st));
  if (!st.exists) {
    ctx.say(`${st.store}: does not exist (a first push creates it)`);
    return;
  }
  for (const line of statusLines(st, s.kind, ctx.style)) ctx.say(line);
  await showStoredLossPlot(ctx, s, st.pointer?.path_in_repo ?? null, opts.plot);
}

/** `soup ckpt list --repo R`: one line per checkpoint; a store that does not exist is said so (exit 0). */
export async function runList(opts: CkptRepoOptions, ctx: CommandContext): Promise<void> {
  const s = store(opts, ctx, false);
  const list = await listCheckpoints({ store: s });
  ctx.emit(listRecord(s.description, list));
  for (const line of listLines(s.description, list, ctx.style)) ctx.say(line);
}

/** `soup ckpt pull --repo R --dest D [--step N | --final]`. */
export async function runPull(opts: CkptPullOptions, ctx: CommandContext): Promise<void> {
  const s = store(opts, ctx, false);
  if (opts.final && opts.step !== undefined) throw new UsageError('pass --step N or --final, not both');
  let pulled: { pathInRepo: string; r: PullResult; dir: string };
  if (opts.final || opts.step !== undefined) {
    const pathInRepo = opts.final ? 'final' : `ckpt/checkpoint-${opts.step}`;
    const r = await pullWithProgress(s, opts, ctx, pathInRepo, undefined);
    pulled = { pathInRepo, r, dir: r.dir };
  } else {
    // The pointed checkpoint, through the one resume path (no fallback: pull exactly what latest.json names).
    const st = await checkpointStatus({ store: s });
    if (!st.exists) throw new StoreMissingError(s.description);
    if (!st.pointer) throw new UsageError(`${s.description} has no valid latest.json: pass --step N or --final`);
    const pathInRepo = st.pointer.path_in_repo;
    if (st.pointer.terminal) {
      const r = await pullWithProgress(s, opts, ctx, pathInRepo, undefined);
      pulled = { pathInRepo, r, dir: r.dir };
    } else {
      const args = { run: st.pointer.run, dest: opts.dest, force: opts.force === true, fallback: false, repair: false };
      const { outcome, dir } = await resumeInto(s, ctx, args).catch((err: unknown) => {
        // A pull that failed its hashes is an integrity failure (exit 8), as for --step/--final.
        if (err instanceof CorruptCheckpointError && err.cause instanceof ChecksumError) throw err.cause;
        if (err instanceof CorruptCheckpointError)
          throw new PullIntegrityError(`pull refused: ${err.message.replace(/ Refusing to resume.*$/, '')}`, {
            cause: err,
          });
        throw err;
      });
      if (outcome.outcome !== 'resume' || dir === null)
        throw new UsageError(`${s.description}: nothing to pull (${outcome.outcome})`);
      pulled = { pathInRepo: outcome.pathInRepo, r: outcome.pulled, dir };
    }
  }
  const { pathInRepo, r, dir } = pulled;
  ctx.emit({ ok: true, ...pullRecord(pathInRepo, r, dir) });
  ctx.say(
    `pulled ${pathInRepo} (step ${r.step}) into ${relative(ctx.cwd, dir) || dir}: ${r.fileCount} files, ` +
      `${formatBytes(r.totalBytes)}, every sha256 matches the manifest`,
  );
}

/**
 * `soup ckpt resume --repo R --run ID [--dest D] [--fallback] [--repair]`: where a run resumes, for any
 * trainer. The checkpoint is always pulled and hash-checked (into --dest, else a temp folder removed after);
 * latest.json is rewritten only with --repair.
 */
export async function runResume(opts: CkptResumeOptions, ctx: CommandContext): Promise<void> {
  const s = store(opts, ctx, opts.repair === true);
  const fallback = opts.fallback === true;
  const p = {
    run: opts.run,
    dest: opts.dest ?? null,
    force: opts.force === true,
    fallback,
    repair: opts.repair === true,
  };
  const refusal = { store: s, run: opts.run, identity: null, fallbackFlag: '--fallback', repoFlag: '--repo' };
  let { outcome, dir } = await resumeInto(s, ctx, p).catch((err: unknown) =>
    explainRefusal(err, { ...refusal, fallbackUsed: fallback }),
  );
  if (outcome.outcome === 'complete' && opts.dest !== undefined) {
    const pull = { dest: opts.dest, force: opts.force };
    dir = (await pullWithProgress(s, pull, ctx, outcome.pathInRepo, outcome.pointer.manifest_sha256)).dir;
  }
  const json = resumeRecord(outcome, dir);
  ctx.emit(json);
  for (const line of resumeLines(outcome, dir, ctx.cwd)) ctx.say(line);
  // A machine line among the human ones (a trainer reads it as text): as it is, like RUN_JSON.
  if (!ctx.json) ctx.raw.stdout.write(`RESUME_JSON ${JSON.stringify(json)}\n`);
}
