import {
  checkpointStatus,
  ChecksumError,
  CorruptCheckpointError,
  PullTargetExistsError,
  openCheckpointStore,
  pullCheckpoint,
  pullResume,
  pushCheckpoint,
  pushFinal,
  type CheckpointStore,
  type PullResult,
  type PullResumeResult,
  type PushResult,
} from '@soup/hub-ckpt';
import { mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import type { CommandContext } from '../_context';
import { explainRefusal } from '../_refusal';
import { renderTable } from '../_table';
import { showStoredLossPlot } from '../_stored-plot';
import { PullIntegrityError, UsageError } from '../errors';
import { formatBytes } from '../format-bytes';
import { formatDuration } from '../progress';
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

function checkDir(ctx: CommandContext, dir: string): string {
  const abs = resolve(ctx.cwd, dir);
  let ok = false;
  try {
    ok = statSync(abs).isDirectory();
  } catch {
    ok = false;
  }
  if (!ok) throw new UsageError(`${dir} is not a checkpoint folder (no such directory)`);
  return abs;
}

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

async function push(
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

function pushJson(r: PushResult): Record<string, unknown> {
  return {
    step: r.step,
    path_in_repo: r.pathInRepo,
    manifest_sha256: r.manifestSha256,
    files: r.fileCount,
    bytes: r.totalBytes,
    commits: r.commits,
    pruned_remote: r.prunedRemote,
    pruned_local: r.prunedLocal,
    ms: Math.round(r.timings.totalMs),
  };
}

/**
 * The step of a checkpoint folder: `--step`, else `trainer_state.json`'s `global_step` (Hugging Face
 * Trainer) or `step` (soup), as an integer ≥ 0.
 */
function stepOf(opts: { step?: number }, dir: string, shown: string): number {
  if (opts.step !== undefined) return opts.step;
  try {
    const state = JSON.parse(readFileSync(join(dir, 'trainer_state.json'), 'utf8')) as {
      step?: unknown;
      global_step?: unknown;
    };
    const s = state.global_step ?? state.step;
    if (typeof s === 'number' && Number.isInteger(s) && s >= 0) return s;
  } catch {
    // no readable trainer_state.json: --step is required
  }
  throw new UsageError(`${shown} has no trainer_state.json with a global_step: pass --step N`);
}

/** `soup ckpt push <dir> [--step N] --repo R --run ID`. */
export async function runPush(opts: CkptPushOptions, ctx: CommandContext, args: string[]): Promise<void> {
  const dir = checkDir(ctx, args[0]!);
  const step = stepOf(opts, dir, args[0]!);
  const s = store(opts, ctx, true);
  const r = await push(ctx, `push checkpoint-${step}`, (onPhase) =>
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
  ctx.emit({ ok: true, store: s.description, ...pushJson(r) });
  ctx.say(
    `pushed ${r.pathInRepo} to ${s.description}: ${r.fileCount} files, ${formatBytes(r.totalBytes)}` +
      `, verified; latest.json → step ${r.step}  ${ctx.style.dim(formatDuration(r.timings.totalMs))}`,
  );
  if (r.prunedRemote.length || r.prunedLocal.length)
    ctx.say(`pruned ${[...r.prunedRemote, ...r.prunedLocal.map((p) => relative(ctx.cwd, p) || p)].join(', ')}`);
}

/** `soup ckpt final <dir> --repo R --run ID`. */
export async function runFinal(opts: CkptFinalOptions, ctx: CommandContext, args: string[]): Promise<void> {
  const dir = checkDir(ctx, args[0]!);
  const step = stepOf(opts, dir, args[0]!);
  const s = store(opts, ctx, true);
  const r = await push(ctx, 'push final', (onPhase) =>
    pushFinal({ store: s, step, dir, run: opts.run, force: opts.force === true, onPhase }),
  );
  ctx.emit({ ok: true, store: s.description, terminal: true, ...pushJson(r) });
  ctx.say(
    `pushed final/ (step ${r.step}) to ${s.description}: ${r.fileCount} files, ${formatBytes(r.totalBytes)}` +
      `, verified; latest.json → final (terminal)`,
  );
}

/** `soup ckpt status --repo R`. */
export async function runStatus(opts: CkptStatusOptions, ctx: CommandContext): Promise<void> {
  const s = store(opts, ctx, false);
  const st = await checkpointStatus({ store: s, verify: true });
  const p = st.pointer;
  ctx.emit({
    store: st.store,
    exists: st.exists,
    pointer: p,
    pointer_errors: st.pointerErrors,
    pointed_verified: st.pointed?.verified ?? null,
    pointed_problems: st.pointed?.problems ?? [],
    checkpoints: st.checkpoints.map((c) => ({
      step: c.step,
      path_in_repo: c.pathInRepo,
      files: c.fileCount,
      bytes: c.totalBytes,
      has_manifest: c.hasManifest,
    })),
    has_final: st.hasFinal,
    tree_bytes: st.treeBytes,
    stored_bytes: st.storedBytes,
  });
  if (!st.exists) {
    ctx.say(`${st.store}: does not exist (a first push creates it)`);
    return;
  }
  const pointerText = p
    ? `step ${p.step} → ${p.path_in_repo}${p.terminal ? ' (terminal)' : ''}, run ${p.run}, ` +
      (st.pointed?.verified
        ? ctx.style.green(
            s.kind === 'hub'
              ? 'verified (LFS files by oid and size; their bytes are hashed when pulled)'
              : 'verified (every byte read back and hashed)',
          )
        : ctx.style.red(`NOT verified: ${(st.pointed?.problems ?? []).slice(0, 3).join('; ')}`)) +
      `, updated ${p.updated_at}`
    : st.hasPointer
      ? ctx.style.red(`invalid: ${st.pointerErrors.join('; ')}`)
      : 'none';
  ctx.say(`${ctx.style.bold(st.store)}\n  latest.json  ${pointerText}`);
  const rows = [
    ['STEP', 'FOLDER', 'FILES', 'SIZE', 'MANIFEST'],
    ...st.checkpoints.map((c) => [
      String(c.step),
      c.pathInRepo,
      String(c.fileCount),
      formatBytes(c.totalBytes),
      c.hasManifest ? 'yes' : ctx.style.red('missing'),
    ]),
  ];
  if (st.checkpoints.length) ctx.say(renderTable(rows, ctx.style.bold).replace(/^/gm, '  '));
  ctx.say(`  final/       ${st.hasFinal ? 'present' : 'absent'}`);
  // On the Hub, pruned checkpoints stay in history (and in the bill) until the history is squashed.
  if (st.storedBytes !== null) {
    const extra = st.storedBytes - st.treeBytes;
    ctx.say(
      `  storage      ${formatBytes(st.storedBytes)} stored (history included), ${formatBytes(st.treeBytes)}` +
        ` in the checkpoints listed` +
        (extra > st.treeBytes
          ? ctx.style.yellow(
              `; ${formatBytes(extra)} is only in older commits: pass --squash-history (hub.squash_history) to free it`,
            )
          : ''),
    );
  }
  await showStoredLossPlot(ctx, s, p?.path_in_repo ?? null, opts.plot);
}

/** Pulls `pathInRepo` into `--dest` (hash-checked, `--force` replaces) with a progress bar. */
async function pullWithProgress(
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
    if (err instanceof PullTargetExistsError)
      throw new UsageError(`--dest ${opts.dest} already exists: pull into a new path, or pass --force to replace it`, {
        cause: err,
      });
    throw err;
  }
}

/**
 * pullResume into `dest` itself (the CLI's --dest is the checkpoint folder): the checkpoint lands in a
 * hidden sibling first, and is renamed into place only once every hash matched. Without `dest` it pulls
 * into a temp folder and removes it: a report that a checkpoint verifies AND pulls cleanly.
 */
async function resumeInto(
  s: CheckpointStore,
  ctx: CommandContext,
  p: { run: string; dest: string | null; force: boolean; fallback: boolean; repair: boolean },
): Promise<{ outcome: PullResumeResult; dir: string | null }> {
  const target = p.dest === null ? null : resolve(ctx.cwd, p.dest);
  if (target !== null && existsSync(target) && !p.force)
    throw new UsageError(`--dest ${p.dest} already exists: pull into a new path, or pass --force to replace it`);
  const parent = target === null ? mkdtempSync(join(tmpdir(), 'soup-resume-')) : `${target}.soup-pull`;
  const bar = ctx.progress({ label: 'resume', unit: 'file', summary: false });
  try {
    rmSync(parent, { recursive: true, force: true });
    const outcome = await pullResume({
      store: s,
      run: p.run,
      dir: parent,
      fallback: p.fallback,
      repair: p.repair,
      overwrite: true,
      signal: ctx.signal,
      logger: { info: (l) => bar.log(l) },
      onFile: (e) => bar.update(e.index + 1, e.name),
    });
    bar.done(outcome.outcome === 'resume' ? 'hashes match' : outcome.outcome);
    if (outcome.outcome !== 'resume' || target === null) return { outcome, dir: null };
    if (existsSync(target)) rmSync(target, { recursive: true, force: true });
    renameSync(outcome.localDir, target);
    return { outcome, dir: target };
  } catch (err) {
    bar.fail();
    throw err;
  } finally {
    rmSync(parent, { recursive: true, force: true });
  }
}

/** `soup ckpt pull --repo R --dest D [--step N | --final]`. */
export async function runPull(opts: CkptPullOptions, ctx: CommandContext): Promise<void> {
  const s = store(opts, ctx, false);
  if (opts.final && opts.step !== undefined) throw new UsageError('pass --step N or --final, not both');
  let pathInRepo: string;
  if (opts.final) pathInRepo = 'final';
  else if (opts.step !== undefined) pathInRepo = `ckpt/checkpoint-${opts.step}`;
  else {
    // The pointed checkpoint, through the one resume path (no fallback: pull exactly what latest.json names).
    const st = await checkpointStatus({ store: s });
    if (!st.pointer)
      throw new UsageError(
        `${s.description} has no valid latest.json${st.exists ? '' : ' (the repo does not exist)'}` +
          `: pass --step N or --final`,
      );
    if (st.pointer.terminal) pathInRepo = st.pointer.path_in_repo;
    else {
      let res: Awaited<ReturnType<typeof resumeInto>>;
      try {
        res = await resumeInto(s, ctx, {
          run: st.pointer.run,
          dest: opts.dest,
          force: opts.force === true,
          fallback: false,
          repair: false,
        });
      } catch (err) {
        // A pull that failed its hashes is an integrity failure (exit 8), as for --step/--final.
        if (err instanceof CorruptCheckpointError && err.cause instanceof ChecksumError) throw err.cause;
        if (err instanceof CorruptCheckpointError)
          throw new PullIntegrityError(`pull refused: ${err.message.replace(/ Refusing to resume.*$/, '')}`, {
            cause: err,
          });
        throw err;
      }
      const { outcome, dir } = res;
      if (outcome.outcome !== 'resume' || dir === null)
        throw new UsageError(`${s.description}: nothing to pull (${outcome.outcome})`);
      const r = outcome.pulled;
      ctx.emit({
        ok: true,
        path_in_repo: outcome.pathInRepo,
        dir,
        step: r.step,
        files: r.fileCount,
        bytes: r.totalBytes,
        manifest_sha256: r.manifestSha256,
      });
      ctx.say(
        `pulled ${outcome.pathInRepo} (step ${r.step}) into ${relative(ctx.cwd, dir) || dir}: ${r.fileCount}` +
          ` files, ${formatBytes(r.totalBytes)}, every sha256 matches the manifest`,
      );
      return;
    }
  }
  const r = await pullWithProgress(s, opts, ctx, pathInRepo, undefined);
  ctx.emit({
    ok: true,
    path_in_repo: pathInRepo,
    dir: r.dir,
    step: r.step,
    files: r.fileCount,
    bytes: r.totalBytes,
    manifest_sha256: r.manifestSha256,
  });
  ctx.say(
    `pulled ${pathInRepo} (step ${r.step}) into ${relative(ctx.cwd, r.dir) || r.dir}: ${r.fileCount} files, ` +
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
  const runId = opts.run;
  const fallback = opts.fallback === true;
  let res: { outcome: PullResumeResult; dir: string | null };
  try {
    res = await resumeInto(s, ctx, {
      run: runId,
      dest: opts.dest ?? null,
      force: opts.force === true,
      fallback,
      repair: opts.repair === true,
    });
  } catch (err) {
    return explainRefusal(err, {
      store: s,
      run: runId,
      identity: null,
      fallbackFlag: '--fallback',
      repoFlag: '--repo',
      fallbackUsed: fallback,
    });
  }
  let { outcome, dir } = res;
  if (outcome.outcome === 'complete' && opts.dest !== undefined) {
    dir = (
      await pullWithProgress(
        s,
        { dest: opts.dest, force: opts.force },
        ctx,
        outcome.pathInRepo,
        outcome.pointer.manifest_sha256,
      )
    ).dir;
  }
  const json =
    outcome.outcome === 'fresh'
      ? { outcome: 'fresh', reason: outcome.reason, step: 0, path_in_repo: null, dir: null }
      : {
          outcome: outcome.outcome,
          step: outcome.step,
          path_in_repo: outcome.pathInRepo,
          dir,
          ...(outcome.outcome === 'resume'
            ? {
                via: outcome.via,
                previous_step: outcome.previousStep,
                repaired: outcome.repaired,
                skipped: outcome.skipped.map((k) => ({
                  step: k.step,
                  path_in_repo: k.pathInRepo,
                  problems: k.problems,
                })),
              }
            : {}),
        };
  ctx.emit(json);
  if (outcome.outcome === 'fresh')
    ctx.say(
      `fresh: ${outcome.reason === 'repo-missing' ? 'the repo does not exist yet' : 'no checkpoint of this run'}` +
        `; start from step 0`,
    );
  else if (outcome.outcome === 'complete')
    ctx.say(
      `complete: ${outcome.pathInRepo} holds the final step ${outcome.step}; nothing to train` +
        `${dir ? ` (pulled into ${relative(ctx.cwd, dir)})` : ''}`,
    );
  else {
    for (const k of outcome.skipped) ctx.say(`skipped ${k.pathInRepo}: ${k.problems.slice(0, 2).join('; ')}`);
    const pointerNote =
      outcome.via === null
        ? ''
        : outcome.repaired
          ? ', latest.json repaired'
          : outcome.previousStep !== null
            ? `; latest.json still names step ${outcome.previousStep} (pass --repair to rewrite it)`
            : '';
    ctx.say(
      `resume from ${outcome.pathInRepo} (step ${outcome.step})${outcome.via ? ` via ${outcome.via}` : ''}` +
        `${dir ? `, pulled into ${relative(ctx.cwd, dir)}` : ', pulls cleanly'}${pointerNote}`,
    );
  }
  if (!ctx.json) ctx.say(`RESUME_JSON ${JSON.stringify(json)}`);
}
