// One launch of the trainer: start it, offer its checkpoints while it runs, stop it when the session ends.
import { redactArgv } from '@soup/hub-ckpt';
import { SupervisorUsageError } from './errors';
import type { OutputLock } from './lock';
import type { MemoryOver, MemoryWatch } from './memory-watch';
import type { NewestStep } from './newest-step';
import type { SessionOptions } from './supervise-options';
import { expandArgv, startTrainer, trainerEnv, type Placeholders, type TrainerExit } from './trainer-child';
import type { CheckpointWatcher } from './watch-checkpoints';
import { lowerOwnPriority } from './_nice';
import { SESSION_SIGNALS } from './signal-judge';
import type { SessionPushes } from './_session-pushes';
import type { SessionStop } from './_session-stop';
import { fmt, q, type Tell } from './_tell';

/** The signals that end a session (soup's, and what a platform sends every process of a job). */
const SESSION_END_SIGNALS: ReadonlySet<NodeJS.Signals> = new Set(SESSION_SIGNALS);

/**
 * How one launch ended: the trainer's exit, the tree's peak memory over it (null: not sampled), when, and whether the
 * memory watch stopped it over --max-memory (`overMax`: its first sample over the limit).
 */
export interface LaunchEnd {
  end: TrainerExit & { killed: boolean };
  launchPeak: number | null;
  exitAt: number;
  overMax: MemoryOver | null;
}

/**
 * Runs the trainer once with `placeholders` until it exits or the session stops (then `stopSignal`, and SIGKILL after
 * `graceMs`), offering complete checkpoints every `pollMs`; tells how it exited and the newest complete checkpoint.
 */
export async function launchOnce(p: {
  o: SessionOptions;
  placeholders: Placeholders;
  secrets: ReadonlyArray<string | null>;
  lock: OutputLock;
  memory: MemoryWatch | null;
  stepSeen: NewestStep;
  watcher: CheckpointWatcher;
  pushes: SessionPushes;
  stop: SessionStop;
  stopSignal: NodeJS.Signals;
  graceMs: number;
  pollMs: number;
  nice: number;
  /** A step-down is possible: a launch over --max-memory (`overMax: 'step-down'`) is then killed at once. */
  canStepDown: boolean;
  tell: Tell;
}): Promise<LaunchEnd> {
  const { o, placeholders, lock, memory, stepSeen, watcher, pushes, stop, stopSignal, graceMs } = p;
  const { emit, warn } = p.tell;
  let end!: TrainerExit & { killed: boolean };
  const childArgv = expandArgv(o.argv, placeholders);
  const child = await startTrainer({
    argv: childArgv,
    env: trainerEnv(o.env, placeholders),
    cwd: o.cwd,
    pipeGraceMs: graceMs,
    onStdout: (d) => (stepSeen.output(d), o.onStdout?.(d)),
    onStderr: (d) => (stepSeen.output(d), o.onStderr?.(d)),
  }).catch((err: NodeJS.ErrnoException) => {
    throw new SupervisorUsageError(
      `cannot start the trainer ${JSON.stringify(childArgv[0])}: ${err.code ?? err.message}`,
      { field: 'argv', cause: err },
    );
  });
  lock.setTrainer(child.pid);
  o.onTrainerLaunched?.(child.pid);
  // Over --max-memory with a step-down to take: killed as the kernel's OOM killer would, then stepped down.
  const kill = (): void => void child.stop({ signal: 'SIGKILL', graceMs: 0 }).catch(() => {});
  memory?.attach(child.pid, p.canStepDown ? kill : undefined);
  emit(
    'launched',
    `launched trainer (pid ${child.pid}): ${redactArgv(childArgv, { secrets: p.secrets }).map(q).join(' ')}`,
    { pid: child.pid },
  );
  if (p.nice > 0) lowerOwnPriority(p.nice);

  const poll = setInterval(() => {
    const c = pushes.offerNewest(Date.now(), false);
    if (c) stepSeen.checkpoint(c.step);
  }, p.pollMs);
  let launchPeak: number | null = null;
  try {
    const first = await Promise.race([
      child.exited.then(() => 'exited' as const),
      stop.stopped.then(() => 'stop' as const),
    ]);
    if (first === 'stop' && !child.done) {
      pushes.ending = true;
      emit(
        'stopping',
        `${stop.reason!.startsWith('time limit') ? `${stop.reason} reached` : `session ending (${stop.reason})`}` +
          `: sending ${stopSignal} to the trainer, waiting up to ${fmt(graceMs)} for it to save`,
        { reason: stop.reason! },
      );
      end = await child.stop({ signal: stopSignal, graceMs });
      if (end.killed) warn(`the trainer did not exit within --grace ${fmt(graceMs)}: killed it (SIGKILL)`);
    } else {
      end = { ...(await child.exited), killed: false };
    }
  } finally {
    clearInterval(poll);
    launchPeak = (await memory?.detach()) ?? null;
  }
  // A trainer killed by a session signal is a session end, not a failure: the platform signalled the whole job
  // (SLURM's --signal without B:, a systemd scope's SIGHUP) and soup's own copy may not have been handled yet.
  if (stop.reason === null && end.code === null && end.signal !== null && SESSION_END_SIGNALS.has(end.signal)) {
    stop.reason = `the trainer got ${end.signal} from outside`;
  }
  const ended = end.leftovers ?? [];
  if (ended.length > 0) {
    const what = end.outputHeld
      ? `the trainer exited, but what it started still held its output after ${fmt(graceMs)}`
      : 'processes the trainer started outlived it';
    const list = ended.map((e) => `${e.pid} (${e.command})`).join(', ');
    warn(`${what}: ended ${ended.length === 1 ? 'process' : 'processes'} ${list}`);
  }
  const exitAt = Date.now();
  watcher.scan(exitAt);
  const newest = watcher.newestComplete({ asOfMs: exitAt, trainerExited: !end.killed })?.checkpoint ?? null;
  emit(
    'trainer-exited',
    `the trainer exited (${end.code !== null ? `code ${end.code}` : `signal ${end.signal}`})` +
      `${newest ? `; newest complete checkpoint: step ${newest.step}` : ''}`,
    {
      ...(newest ? { step: newest.step } : {}),
      exit: { code: end.code, signal: end.signal, stopping: stop.reason !== null },
    },
  );
  return { end, launchPeak, exitAt, overMax: memory?.launchOver() ?? null };
}
