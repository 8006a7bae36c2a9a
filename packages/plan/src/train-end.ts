// How a session of soup's own trainer ends: its facts decide the exit code (one of the caller's numbers), the result
// it prints, its closing sentences and which checkpoint's loss history it shows. The caller prints them.
import type { CheckpointStore } from '@soup/hub-ckpt';
import type { SoupConfig } from '@soup/config';
import { describeSegmentSaved, describeSessionPeak, describeTuningPeak, type SessionResult } from '@soup/supervisor';
import { join } from 'node:path';
import type { TrainFacts } from './train-facts';
import { completedTrainResult, trainResultOf } from './train-result';
import { describeSessionEnd } from './train-sentences';
import { trainPathsOf } from './train-supervise-options';

/** The caller's exit codes: the session's rules pick one, the caller owns the numbers. */
export interface TrainExitCodes {
  /** Final pushed, or already complete. */
  ok: number;
  /** Segment saved (also when a checkpoint of this session is in the store but a newer one is not): run again. */
  segmentSaved: number;
  /** The newest checkpoint is not pushed and nothing of this session is in the store. */
  notPushed: number;
}

/** What `--json` prints when the session's newest checkpoint could not be pushed. */
export interface NotPushedResult {
  ok: false;
  outcome: 'not-pushed';
  not_pushed_steps: number[];
  /** The newest step of this session in the store (null: none). */
  stored_step: number | null;
  /** Where the newest unpushed checkpoint is kept, as the caller shows paths. */
  local_dir: string;
  exit_code: number;
}

/** How the session ended (see {@link trainEndOf}). */
export interface TrainEnd {
  /**
   * `final`: final/ pushed this session; `segment`: a segment saved (run again); `complete`: the store held final/
   * before the session; `failed`: the trainer failed; `not-pushed`: the newest checkpoint is not in the store.
   */
  outcome: 'final' | 'segment' | 'complete' | 'failed' | 'not-pushed';
  exitCode: number;
  /** The closing lines, in order. */
  lines: string[];
  /** The error to print (the trainer's failure, what was not pushed); null when none. */
  error: string | null;
  /** The session's result (`RUN_JSON`); null when the trainer failed or the newest checkpoint is not pushed. */
  result: SessionResult | null;
  /** With `not-pushed`: its JSON. */
  notPushed: NotPushedResult | null;
  /** The checkpoint whose loss history the session shows (final/, or this segment's newest); null: none. */
  lossDir: string | null;
}

/** Options of {@link trainEndOf}. */
export interface TrainEndOptions {
  /** The session's facts, its outcome (`r`) included. */
  facts: TrainFacts;
  config: SoupConfig;
  store: CheckpointStore;
  storeName: string;
  runId: string;
  startedAtMs: number;
  exitCodes: TrainExitCodes;
  /** The time limit as the caller shows it (see describeSessionEnd). */
  timeLimit: string;
  /** Names a local path as the caller shows paths. */
  show: (path: string) => string;
}

/**
 * The end of one session (see the file comment): a trainer that failed keeps its own exit code; a store that could
 * not take the newest checkpoint is `not-pushed` (segment saved when a checkpoint of this session is in the store,
 * else `notPushed`); a run complete before the session says what the store holds; else a segment or final/.
 */
export async function trainEndOf(p: TrainEndOptions): Promise<TrainEnd> {
  const { facts: t, config, exitCodes: codes } = p;
  const { ckptRoot, finalDir } = trainPathsOf(config.output);
  const { r } = t;
  const none = { lines: [], error: null, result: null, notPushed: null, lossDir: null };
  if (r === null) {
    const reason = t.finalError?.message ?? 'the store is unreachable';
    return notPushedEnd(p, [...t.unpushed, { step: t.lastStep, reason }], t.pushed, p.show(finalDir), true);
  }
  if (r.outcome === 'complete' && !r.launched) {
    const { step, pathInRepo } = r;
    const result = await completedTrainResult({ ...p, step, pathInRepo, exitCode: codes.ok });
    return { ...none, outcome: 'complete', exitCode: codes.ok, lines: t.closing !== null ? [t.closing] : [], result };
  }
  if (r.outcome === 'trainer-failed') return { ...none, outcome: 'failed', exitCode: r.exitCode, error: r.message };
  const pushed = r.pushedSteps;
  const finalPushed = r.outcome === 'complete';
  // The newest checkpoint this session saved is not in the store (it was unreachable).
  const saved = t.savedStep ?? t.startStep;
  if (!finalPushed && saved > (pushed.at(-1) ?? t.startStep) && t.unpushed.length > 0)
    return notPushedEnd(p, t.unpushed, pushed, p.show(join(ckptRoot, `checkpoint-${saved}`)));
  // The supervisor's closing sentence (segment saved, run complete); none when nothing was launched: said here.
  const lines: string[] = [];
  if (r.outcome === 'not-launched') {
    const reason = t.ended?.reason ?? 'abort';
    lines.push(
      describeSessionEnd(t, p.timeLimit),
      describeSegmentSaved(reason, t.startStep > 0 ? t.startStep : null, p.storeName),
    );
  } else if (t.closing !== null) lines.push(t.closing);
  // "Segment saved, run the same command again" is one exit code however the segment ended.
  const exitCode = finalPushed ? codes.ok : codes.segmentSaved;
  const result = trainResultOf({ facts: t, r, config, store: p.store, startedAtMs: p.startedAtMs, exitCode });
  if (t.memory !== null) lines.push(`${describeSessionPeak(t.memory)}${describeTuningPeak(t.memory)}`);
  if (finalPushed)
    lines.push(`final model: ${p.show(finalDir)}/ (model.safetensors + config.json: loads as transformers' GPT-2)`);
  return {
    ...none,
    outcome: finalPushed ? 'final' : 'segment',
    exitCode,
    lines,
    result,
    lossDir: finalPushed ? finalDir : join(ckptRoot, `checkpoint-${t.lastStep}`),
  };
}

/** The newest checkpoint not pushed: what is kept where, and the exit (segment saved when the store holds one). */
function notPushedEnd(
  p: TrainEndOptions,
  unpushed: ReadonlyArray<{ step: number; reason: string }>,
  pushed: readonly number[],
  localDir: string,
  final = false,
): TrainEnd {
  const last = unpushed.at(-1)!;
  const steps = [...new Set(unpushed.map((u) => u.step))];
  const safe = pushed.at(-1);
  const exitCode = safe !== undefined ? p.exitCodes.segmentSaved : p.exitCodes.notPushed;
  const error =
    `could not push ${final ? 'final/' : `checkpoint-${last.step}`} to ${p.storeName}: ${last.reason}` +
    `. Not pushed this session: step${unpushed.length === 1 ? '' : 's'} ${steps.join(', ')} ` +
    `(the newest is kept locally in ${localDir}). ` +
    (safe !== undefined
      ? `The store holds step ${safe} from this session: run the same command again to continue from it (exit ` +
        `${exitCode}).`
      : `Nothing from this session is in the store (exit ${exitCode}).`);
  return {
    outcome: 'not-pushed',
    exitCode,
    lines: [],
    error,
    result: null,
    notPushed: {
      ok: false,
      outcome: 'not-pushed',
      not_pushed_steps: steps,
      stored_step: safe ?? null,
      local_dir: localDir,
      exit_code: exitCode,
    },
    lossDir: null,
  };
}
