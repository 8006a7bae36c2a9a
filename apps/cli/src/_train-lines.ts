// Where soup train's lines from its session go (stdout, a warning, the progress bar): the trainer child's reports
// (`soup-train {json}` on its stdout), worded by @soup/plan, and the supervisor's events; their facts go into
// @soup/plan's TrainFacts.
import { trackSession, type SuperviseEvent } from '@soup/supervisor';
import { join } from 'node:path';
import type { CommandContext } from './_context';
import {
  applyTrainReport,
  describeSessionEnd,
  describeTrainReport,
  emptyTrainFacts,
  type TrainFacts,
} from '@soup/plan';
import { REPORT_PREFIX, type TrainReport } from '@soup/onnx-train';
import { formatDuration, type Progress } from '@soup/progress';
import type { SoupConfig } from '@soup/config';

/** What the session did (@soup/plan's TrainFacts), and the progress bar its lines go through. */
export interface TrainSession extends TrainFacts {
  bar: Progress | null;
}

/** A session before anything happened. */
export function emptySession(): TrainSession {
  return { ...emptyTrainFacts(), bar: null };
}

/** What the listeners need to know of the run. */
export interface TrainLinesOptions {
  ctx: CommandContext;
  config: SoupConfig;
  /** Where the trainer writes its checkpoints. */
  ckptRoot: string;
  timeLimitMs: number | null;
  startedAtMs: number;
  showPath: (p: string) => string;
}

/** The supervisor's listeners for soup train: they print, and fill `s`. */
export function trainListeners(
  s: TrainSession,
  p: TrainLinesOptions,
): {
  onStdout: (chunk: string) => void;
  onStderr: (chunk: string) => void;
  onEvent: (e: SuperviseEvent) => void;
  log: (line: string) => void;
} {
  const { ctx, config, ckptRoot } = p;
  const horizon = config.training.steps;
  let launchedAt: number | null = null;
  const log = (line: string): void => (s.bar ? s.bar.log(line) : ctx.say(line));
  const warn = (line: string): void => (s.bar ? s.bar.log(`warning: ${line}`) : ctx.warn(line));

  const onReport = (r: TrainReport): void => {
    applyTrainReport(s, r, launchedAt);
    const d = describeTrainReport(r, config.data.valPath);
    if (d?.level === 'status' && r.event === 'step') s.bar?.update(r.step, d.line);
    else if (d?.level === 'info') ctx.say(d.line);
    else if (d?.level === 'warn') warn(d.line);
  };
  const lines = (sink: (line: string) => void) => {
    let partial = '';
    return (chunk: string): void => {
      const all = (partial + chunk).split('\n');
      partial = all.pop() ?? '';
      for (const line of all) sink(line);
    };
  };
  const onStdout = lines((line) => {
    if (line.startsWith(REPORT_PREFIX)) onReport(JSON.parse(line.slice(REPORT_PREFIX.length)) as TrainReport);
    else if (line !== '') log(line);
  });
  const onStderr = lines((line) => {
    if (line !== '') s.bar ? s.bar.log(line) : ctx.stderr.write(`${line}\n`);
  });

  const track = trackSession({ signal: ctx.signal, startedAtMs: p.startedAtMs, into: s });
  const onEvent = (e: SuperviseEvent): void => {
    track.onEvent(e);
    switch (e.type) {
      case 'resumed':
        log(`resuming from ckpt/checkpoint-${e.step} at step ${e.step}`);
        return;
      case 'launched':
        launchedAt = Date.now();
        log(e.line);
        return;
      case 'pushed':
        log(e.line);
        return;
      case 'push-failed': {
        const reason = s.unpushed.at(-1)?.reason;
        warn(
          `could not push checkpoint-${e.step} (${reason}); training goes on, the next boundary pushes again ` +
            `(kept locally in ${p.showPath(join(ckptRoot, `checkpoint-${e.step}`))})`,
        );
        return;
      }
      case 'stopping':
        return;
      case 'trainer-exited':
        s.atHorizon = e.exit?.code === 0 && !e.exit.stopping && s.lastStep >= horizon;
        if (e.exit?.stopping && s.ended !== null) ctx.say(describeSessionEnd(s, formatDuration(p.timeLimitMs ?? 0)));
        return;
      case 'oom-step-down':
        warn(e.line);
        return;
      case 'pushing':
        return;
      case 'warning':
      case 'leftovers':
        warn(e.line);
        return;
      default:
        // soup train words the run, the batch and the micro-batch itself; the closing sentence (topic `outcome`) is
        // said with the session's end (@soup/plan's trainEndOf).
        if (e.topic === undefined) log(e.line);
    }
  };
  return { onStdout, onStderr, onEvent, log };
}
