// The out-of-memory step-down: a trainer that ran out of memory at micro-batch m resumes with the next smaller one.
import type { MemoryOver } from './memory-watch';
import type { NewestStep } from './newest-step';
import type { OomStepDown } from './run-identity';
import type { SessionFacts, SessionOptions } from './supervise-options';
import type { TrainerExit } from './trainer-child';
import type { SessionPushes } from './_session-pushes';
import { microShape, type Tell } from './_tell';

/**
 * Judges a launch that failed with micro-batch `micro`: null when it is no step-down (not out of memory, stopped,
 * no smaller divisor or no retry left, said as a warning); else the step-down, recorded in `facts.oomStepDowns`
 * and told, with where the trainer resumes from (the newest complete checkpoint, offered for a push).
 */
export function planStepDown(p: {
  o: SessionOptions;
  end: TrainerExit;
  stopped: boolean;
  micro: number | null;
  G: number | null;
  worldSize: number;
  maxRetries: number;
  launchPeak: number | null;
  exitAt: number;
  /** The memory watch stopped the launch over --max-memory: judged out of memory, whatever its exit. */
  overMax: MemoryOver | null;
  resumeFrom: string | null;
  stepSeen: NewestStep;
  pushes: SessionPushes;
  facts: SessionFacts;
  tell: Tell;
}): { stepDown: OomStepDown; resumeFrom: string | null } | null {
  const { o, end, micro, worldSize, maxRetries, stepSeen, facts } = p;
  const { emit, warn, show } = p.tell;
  // An out-of-memory failure with a smaller divisor left and retries left: step down, resume, launch again.
  if (p.stopped || micro === null || p.G === null) return null;
  if (p.overMax === null && (end.code === 0 || !o.judgeOutOfMemory)) return null;
  const G = p.G;
  const oomLine = p.overMax?.line ?? o.judgeOutOfMemory!(end);
  if (oomLine === null) return null;
  const to = o.nextMicroBatchSize?.(micro) ?? null;
  if (facts.oomStepDowns.length >= maxRetries || to === null) {
    warn(
      `the trainer ran out of memory with micro ${microShape(micro, G, worldSize)} (${oomLine}): ` +
        (to === null
          ? 'no smaller divisor of G / world size is left'
          : `--max-oom-retries ${maxRetries} step-down${maxRetries === 1 ? '' : 's'} already made this session`),
    );
    return null;
  }
  // The newest complete checkpoint (this session's, else the one pulled) is where the trainer resumes;
  // it is offered for a push, which goes on in the background while the trainer runs again.
  const c = p.pushes.offerNewest(p.exitAt, true);
  if (c) stepSeen.checkpoint(c.step);
  const from = micro;
  const step = stepSeen.step;
  const s: OomStepDown = { step, from, to, peak_bytes: p.launchPeak, error: oomLine };
  facts.oomStepDowns.push(s);
  const resumeFrom = c ? c.path : p.resumeFrom;
  emit(
    'oom-step-down',
    `out of memory ${step === null ? 'before the first reported step' : `at step ${step}`} with micro ` +
      `${microShape(from, G, worldSize)} (${oomLine}): ` +
      `resuming from ` +
      (c
        ? `${show(c.path)} (step ${c.step})`
        : resumeFrom !== null
          ? `${show(resumeFrom)} (the checkpoint this session pulled)`
          : 'the beginning (no complete checkpoint yet)') +
      ` ` +
      `with micro ${microShape(to, G, worldSize)} (step-down ${facts.oomStepDowns.length} of at most ` +
      `${maxRetries})`,
    step !== null ? { step } : {},
  );
  return { stepDown: s, resumeFrom };
}
