// What `soup train` and `soup run` share around supervise() (@soup/supervisor): the store they open
// (@soup/hub-ckpt), the memory watch and the out-of-memory step-down (@soup/plan), the options every session
// passes, and the session's result, printed the same way.
import {
  openSessionStore as openStore,
  type CheckpointStore,
  type OpenSessionStoreOptions,
  type SessionStore,
} from '@soup/hub-ckpt';
import { sessionMemoryWatch, type SessionMemoryWatch } from '@soup/plan';
import type { SessionResult, SuperviseEvent, SuperviseOptions } from '@soup/supervisor';
import type { CommandContext } from './_context';
import { explainRefusal } from './_refusal';

/** The session's store (@soup/hub-ckpt's openSessionStore), its retry warnings said as the CLI says warnings. */
export function openSessionStore(
  ctx: CommandContext,
  p: Omit<OpenSessionStoreOptions, 'env' | 'cwd' | 'warn'>,
): SessionStore {
  return openStore({ ...p, env: ctx.env, cwd: ctx.cwd, warn: (line) => ctx.warn(line) });
}

/** The options every session passes: where it runs, the store, when it started, how a refusal is explained. */
export function sessionOptions(
  ctx: CommandContext,
  p: {
    store: CheckpointStore;
    storeName: string;
    startedAtMs: number;
    identity: Record<string, unknown> | null;
    /** What resumes from the newest checkpoint that pulls cleanly. */
    fallbackFlag: string;
    fallbackUsed?: boolean;
  },
): Pick<SuperviseOptions, 'store' | 'storeName' | 'cwd' | 'env' | 'signal' | 'startedAtMs' | 'refusal'> {
  const { store } = p;
  return {
    store,
    storeName: p.storeName,
    cwd: ctx.cwd,
    env: ctx.env,
    signal: ctx.signal,
    startedAtMs: p.startedAtMs,
    refusal: (err, run) =>
      explainRefusal(err, {
        store,
        run,
        identity: p.identity,
        fallbackFlag: p.fallbackFlag,
        repoFlag: '--repo',
        ...(p.fallbackUsed !== undefined ? { fallbackUsed: p.fallbackUsed } : {}),
      }),
  };
}

/**
 * The supervisor's lines as they are (`soup run`: the trainer's output on stdout, or on stderr with --json); the
 * trainer's exit is told by the outcome, its event is for callers that word the session end themselves.
 */
export function plainListeners(ctx: CommandContext): Pick<SuperviseOptions, 'onEvent' | 'onStdout' | 'onStderr'> {
  const human = ctx.json ? ctx.raw.stderr : ctx.raw.stdout;
  return {
    onEvent: (e: SuperviseEvent): void =>
      e.type === 'trainer-exited' ? undefined : e.level === 'warn' ? ctx.warn(e.line) : ctx.say(e.line),
    onStdout: (d) => void human.write(d),
    onStderr: (d) => void ctx.raw.stderr.write(d),
  };
}

/** The memory watch over the trainer's tree (@soup/plan's sessionMemoryWatch) on the session's device. */
export function sessionMemory(ctx: CommandContext, device: { kind: 'cpu' | 'cuda'; id: number }): SessionMemoryWatch {
  return sessionMemoryWatch({ device, env: ctx.env });
}

/**
 * Prints the result `soup train` and `soup run` end with (@soup/supervisor's one shape): `RUN_JSON {...}` among the
 * human lines, or the object alone with --json.
 */
export function printResult(ctx: CommandContext, result: SessionResult): void {
  if (ctx.json) ctx.emit(result);
  else ctx.raw.stdout.write(`RUN_JSON ${JSON.stringify(result)}\n`);
}
