import {
  checkpointStatus,
  describeList,
  describePull,
  describePush,
  describeResume,
  describeStatus,
  listCheckpoints,
  listRecord,
  localCheckpoint,
  pullPointed,
  pullRecord,
  pullResumeInto,
  openCheckpointStore,
  pushCheckpoint,
  pushFinal,
  pushRecord,
  resumeRecord,
  statusRecord,
  type CheckpointStore,
} from '@soup/hub-ckpt';
import { resolve } from 'node:path';
import { lineStyle, sayLines } from '../_ckpt-lines';
import { pushWithProgress, withFileBar } from '../_ckpt-transfer';
import type { CommandContext } from '../_context';
import { explainRefusal } from '../_refusal';
import { showStoredLossPlot } from '../_stored-plot';
import { UsageError } from '../errors';
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
const checkpointDir = (ctx: CommandContext, dir: string, step: number | undefined) =>
  localCheckpoint({ dir, step, cwd: ctx.cwd, stepFlag: '--step N' });

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
  sayLines(ctx, describePush(s.description, r, lineStyle(ctx)));
}

/** `soup ckpt final <dir> --repo R --run ID`. */
export async function runFinal(opts: CkptFinalOptions, ctx: CommandContext, args: string[]): Promise<void> {
  const { dir, step } = checkpointDir(ctx, args[0]!, opts.step);
  const s = store(opts, ctx, true);
  const r = await pushWithProgress(ctx, 'push final', (onPhase) =>
    pushFinal({ store: s, step, dir, run: opts.run, force: opts.force === true, onPhase }),
  );
  ctx.emit({ ok: true, store: s.description, terminal: true, ...pushRecord(r) });
  sayLines(ctx, describePush(s.description, r, lineStyle(ctx)));
}

/** `soup ckpt status --repo R`. */
export async function runStatus(opts: CkptStatusOptions, ctx: CommandContext): Promise<void> {
  const s = store(opts, ctx, false);
  const st = await checkpointStatus({ store: s, verify: true });
  ctx.emit(statusRecord(st));
  sayLines(ctx, describeStatus(st, s.kind, lineStyle(ctx)));
  if (st.exists) await showStoredLossPlot(ctx, s, st.pointer?.path_in_repo ?? null, opts.plot);
}

/** `soup ckpt list --repo R`: one line per checkpoint; a store that does not exist is said so (exit 0). */
export async function runList(opts: CkptRepoOptions, ctx: CommandContext): Promise<void> {
  const s = store(opts, ctx, false);
  const list = await listCheckpoints({ store: s });
  ctx.emit(listRecord(s.description, list));
  sayLines(ctx, describeList(s.description, list, lineStyle(ctx)));
}

/** `soup ckpt pull --repo R --dest D [--step N | --final]`: the one named, else the one latest.json names. */
export async function runPull(opts: CkptPullOptions, ctx: CommandContext): Promise<void> {
  const s = store(opts, ctx, false);
  if (opts.final && opts.step !== undefined) throw new UsageError('pass --step N or --final, not both');
  const pull = {
    store: s,
    dest: resolve(ctx.cwd, opts.dest),
    step: opts.final ? ('final' as const) : opts.step,
    overwrite: opts.force === true,
    stepFlag: '--step N',
    finalFlag: '--final',
  };
  const { pathInRepo, pulled, dir } = await withFileBar(
    ctx,
    'pull',
    (io) => pullPointed({ ...pull, ...io }),
    () => 'hashes match',
    opts.dest,
  );
  ctx.emit({ ok: true, ...pullRecord(pathInRepo, pulled, dir) });
  ctx.say(describePull(pathInRepo, pulled, dir, lineStyle(ctx)));
}

/**
 * `soup ckpt resume --repo R --run ID [--dest D] [--fallback] [--repair]`: where a run resumes, for any
 * trainer. The checkpoint is always pulled and hash-checked (into --dest, else a temp folder removed after);
 * latest.json is rewritten only with --repair.
 */
export async function runResume(opts: CkptResumeOptions, ctx: CommandContext): Promise<void> {
  const s = store(opts, ctx, opts.repair === true);
  const fallback = opts.fallback === true;
  const resume = {
    store: s,
    run: opts.run,
    dest: opts.dest === undefined ? null : resolve(ctx.cwd, opts.dest),
    overwrite: opts.force === true,
    fallback,
    repair: opts.repair === true,
    pullFinal: true,
  };
  const refusal = { store: s, run: opts.run, identity: null, fallbackFlag: '--fallback', repoFlag: '--repo' };
  const { outcome, dir } = await withFileBar(
    ctx,
    'resume',
    (io) => pullResumeInto({ ...resume, ...io }),
    (r) => (r.outcome.outcome === 'resume' ? 'hashes match' : r.outcome.outcome),
    opts.dest,
  ).catch((err: unknown) => explainRefusal(err, { ...refusal, fallbackUsed: fallback }));
  const json = resumeRecord(outcome, dir);
  ctx.emit(json);
  sayLines(ctx, describeResume(outcome, dir, lineStyle(ctx)));
  // A machine line among the human ones (a trainer reads it as text): as it is, like RUN_JSON.
  if (!ctx.json) ctx.raw.stdout.write(`RESUME_JSON ${JSON.stringify(json)}\n`);
}
