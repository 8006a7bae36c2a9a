import { checkpointStatus, PullTargetExistsError, pullCheckpoint, pushCheckpoint, pushFinal, resolveResume, type CheckpointStore, type PullResult, type PushResult } from '@soup/hub-ckpt';
import { readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import type { CommandContext } from '../_context';
import { explainRefusal } from '../_refusal';
import { openCheckpointStore } from '../_store';
import { renderTable } from '../_table';
import { showStoredLossPlot } from '../_stored-plot';
import { UsageError } from '../errors';
import { formatBytes } from '../format-bytes';
import { formatDuration } from '../progress';

function store(opts: Record<string, unknown>, ctx: CommandContext, needsWrite: boolean): CheckpointStore {
  return openCheckpointStore({
    ctx,
    repo: String(opts.repo),
    repoType: (opts.repoType as 'model' | 'dataset' | undefined) ?? 'model',
    private: !opts.public,
    endpoint: null,
    needsWrite,
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

async function push(ctx: CommandContext, label: string, fn: (onPhase: (e: { phase: string; path?: string }) => void) => Promise<PushResult>): Promise<PushResult> {
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
function stepOf(opts: Record<string, unknown>, dir: string, shown: string): number {
  if (opts.step !== undefined) return Number(opts.step);
  try {
    const state = JSON.parse(readFileSync(join(dir, 'trainer_state.json'), 'utf8')) as { step?: unknown; global_step?: unknown };
    const s = state.global_step ?? state.step;
    if (typeof s === 'number' && Number.isInteger(s) && s >= 0) return s;
  } catch {
    // no readable trainer_state.json: --step is required
  }
  throw new UsageError(`${shown} has no trainer_state.json with a global_step: pass --step N`);
}

/** `soup ckpt push <dir> [--step N] --repo R --run ID`. */
export async function runPush(opts: Record<string, unknown>, ctx: CommandContext, args: string[]): Promise<void> {
  const dir = checkDir(ctx, args[0]!);
  const step = stepOf(opts, dir, args[0]!);
  const s = store(opts, ctx, true);
  const r = await push(ctx, `push checkpoint-${step}`, (onPhase) =>
    pushCheckpoint({
      store: s,
      step,
      dir,
      run: String(opts.run),
      ...(opts.keepLocal !== undefined ? { keepLocal: Number(opts.keepLocal) } : { keepLocal: Infinity }),
      ...(opts.keepRemote !== undefined ? { keepRemote: Number(opts.keepRemote) } : {}),
      onPhase,
    }),
  );
  ctx.emit({ ok: true, store: s.description, ...pushJson(r) });
  ctx.say(`pushed ${r.pathInRepo} to ${s.description}: ${r.fileCount} files, ${formatBytes(r.totalBytes)}, verified; latest.json → step ${r.step}  ${ctx.style.dim(formatDuration(r.timings.totalMs))}`);
  if (r.prunedRemote.length || r.prunedLocal.length) ctx.say(`pruned ${[...r.prunedRemote, ...r.prunedLocal.map((p) => relative(ctx.cwd, p) || p)].join(', ')}`);
}

/** `soup ckpt final <dir> --repo R --run ID`. */
export async function runFinal(opts: Record<string, unknown>, ctx: CommandContext, args: string[]): Promise<void> {
  const dir = checkDir(ctx, args[0]!);
  const step = stepOf(opts, dir, args[0]!);
  const s = store(opts, ctx, true);
  const r = await push(ctx, 'push final', (onPhase) => pushFinal({ store: s, step, dir, run: String(opts.run), onPhase }));
  ctx.emit({ ok: true, store: s.description, terminal: true, ...pushJson(r) });
  ctx.say(`pushed final/ (step ${r.step}) to ${s.description}: ${r.fileCount} files, ${formatBytes(r.totalBytes)}, verified; latest.json → final (terminal)`);
}

/** `soup ckpt status --repo R`. */
export async function runStatus(opts: Record<string, unknown>, ctx: CommandContext): Promise<void> {
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
    checkpoints: st.checkpoints.map((c) => ({ step: c.step, path_in_repo: c.pathInRepo, files: c.fileCount, bytes: c.totalBytes, has_manifest: c.hasManifest })),
    has_final: st.hasFinal,
  });
  if (!st.exists) {
    ctx.say(`${st.store}: does not exist (a first push creates it)`);
    return;
  }
  const pointerText = p
    ? `step ${p.step} → ${p.path_in_repo}${p.terminal ? ' (terminal)' : ''}, run ${p.run}, ${st.pointed?.verified ? ctx.style.green('verified') : ctx.style.red(`NOT verified: ${(st.pointed?.problems ?? []).slice(0, 3).join('; ')}`)}, updated ${p.updated_at}`
    : st.hasPointer
      ? ctx.style.red(`invalid: ${st.pointerErrors.join('; ')}`)
      : 'none';
  ctx.say(`${ctx.style.bold(st.store)}\n  latest.json  ${pointerText}`);
  const rows = [['STEP', 'FOLDER', 'FILES', 'SIZE', 'MANIFEST'], ...st.checkpoints.map((c) => [String(c.step), c.pathInRepo, String(c.fileCount), formatBytes(c.totalBytes), c.hasManifest ? 'yes' : ctx.style.red('missing')])];
  if (st.checkpoints.length) ctx.say(renderTable(rows, ctx.style.bold).replace(/^/gm, '  '));
  ctx.say(`  final/       ${st.hasFinal ? 'present' : 'absent'}`);
  await showStoredLossPlot(ctx, s, p?.path_in_repo ?? null, opts.plot as string | undefined);
}

/** Pulls `pathInRepo` into `--dest` (hash-checked, `--force` replaces) with a progress bar. */
async function pullWithProgress(
  s: CheckpointStore,
  opts: Record<string, unknown>,
  ctx: CommandContext,
  pathInRepo: string,
  expectedManifestSha256: string | undefined,
): Promise<PullResult> {
  const bar = ctx.progress({ label: `pull ${pathInRepo}`, unit: 'file', summary: false });
  try {
    const r = await pullCheckpoint({
      store: s,
      pathInRepo,
      dir: resolve(ctx.cwd, String(opts.dest)),
      overwrite: Boolean(opts.force),
      ...(expectedManifestSha256 ? { expectedManifestSha256 } : {}),
      onFile: (e) => bar.update(e.index + 1, e.name),
    });
    bar.done('hashes match');
    return r;
  } catch (err) {
    bar.fail();
    if (err instanceof PullTargetExistsError) throw new UsageError(`--dest ${String(opts.dest)} already exists: pull into a new path, or pass --force to replace it`, { cause: err });
    throw err;
  }
}

/** `soup ckpt pull --repo R --dest D [--step N | --final]`. */
export async function runPull(opts: Record<string, unknown>, ctx: CommandContext): Promise<void> {
  const s = store(opts, ctx, false);
  if (opts.final && opts.step !== undefined) throw new UsageError('pass --step N or --final, not both');
  let pathInRepo: string;
  let expected: string | undefined;
  if (opts.final) pathInRepo = 'final';
  else if (opts.step !== undefined) pathInRepo = `ckpt/checkpoint-${Number(opts.step)}`;
  else {
    const st = await checkpointStatus({ store: s });
    if (!st.pointer) throw new UsageError(`${s.description} has no valid latest.json${st.exists ? '' : ' (the repo does not exist)'}: pass --step N or --final`);
    pathInRepo = st.pointer.path_in_repo;
    expected = st.pointer.manifest_sha256;
  }
  const r = await pullWithProgress(s, opts, ctx, pathInRepo, expected);
  ctx.emit({ ok: true, path_in_repo: pathInRepo, dir: r.dir, step: r.step, files: r.fileCount, bytes: r.totalBytes, manifest_sha256: r.manifestSha256 });
  ctx.say(`pulled ${pathInRepo} (step ${r.step}) into ${relative(ctx.cwd, r.dir) || r.dir}: ${r.fileCount} files, ${formatBytes(r.totalBytes)}, every sha256 matches the manifest`);
}

/** `soup ckpt resume --repo R --run ID [--dest D]`: where a run resumes, for any trainer. */
export async function runResume(opts: Record<string, unknown>, ctx: CommandContext): Promise<void> {
  const s = store(opts, ctx, false);
  const runId = String(opts.run);
  let outcome;
  try {
    outcome = await resolveResume({ store: s, run: runId, fallback: Boolean(opts.fallback), logger: { info: (l) => ctx.say(l) } });
  } catch (err) {
    return explainRefusal(err, { store: s, run: runId, identity: null, fallbackFlag: '--fallback', repoFlag: '--repo' });
  }
  let dir: string | null = null;
  if (outcome.outcome !== 'fresh' && opts.dest !== undefined) {
    dir = (await pullWithProgress(s, opts, ctx, outcome.pathInRepo, outcome.outcome === 'resume' ? outcome.manifestSha256 : undefined)).dir;
  }
  const json =
    outcome.outcome === 'fresh'
      ? { outcome: 'fresh', reason: outcome.reason, step: 0, path_in_repo: null, dir: null }
      : { outcome: outcome.outcome, step: outcome.step, path_in_repo: outcome.pathInRepo, dir, ...(outcome.outcome === 'resume' ? { via: outcome.via, repaired: outcome.repaired } : {}) };
  ctx.emit(json);
  if (outcome.outcome === 'fresh') ctx.say(`fresh: ${outcome.reason === 'repo-missing' ? 'the repo does not exist yet' : 'no checkpoint of this run'}; start from step 0`);
  else if (outcome.outcome === 'complete') ctx.say(`complete: ${outcome.pathInRepo} holds the final step ${outcome.step}; nothing to train${dir ? ` (pulled into ${relative(ctx.cwd, dir)})` : ''}`);
  else ctx.say(`resume from ${outcome.pathInRepo} (step ${outcome.step})${outcome.via ? ` via ${outcome.via}` : ''}${dir ? `, pulled into ${relative(ctx.cwd, dir)}` : ''}`);
  if (!ctx.json) ctx.say(`RESUME_JSON ${JSON.stringify(json)}`);
}
