// Several nodes, one writer: node 0 leads (lease, pushes, pointer, final); every other node follows through small
// notes in a shared nodes folder (see _nodes-files.ts and docs/several-nodes.md). One soup runs per node.
import type { CheckpointStore } from '@soup/hub-ckpt';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { SupervisorUsageError } from './errors';
import type { NodeRole } from './node-role';
import type { CheckpointWatcher } from './watch-checkpoints';
import type { SessionOptions } from './supervise-options';
import type { TrainerExit } from './trainer-child';
import type { SessionStop } from './_session-stop';
import type { Tell } from './_tell';
import {
  type CurrentNote,
  type EndNote,
  type ExitNote,
  pause,
  readNote,
  readNotes,
  type ResumeNote,
  type VerdictNote,
  writeNote,
} from './_nodes-files';

/** How often a node looks at the others' notes. */
const NOTE_POLL_MS = 200;
/** A follower joins a session node 0 started at most this long before the follower itself started. */
const JOIN_WINDOW_MS = 120_000;

/** One node's part in a session of several (a single node gets the same shape, doing nothing). */
export interface NodeSession {
  readonly role: NodeRole;
  readonly leader: boolean;
  /** This session's folder in the nodes folder, every node's notes in it (null: a single node). */
  readonly dir: string | null;
  /** Follower: waits for node 0's resume note (null: node 0 ended first, or this session was stopped). */
  awaitResume(signal: AbortSignal): Promise<ResumeNote | null>;
  /** Leader: tells the followers what it resumed from (a follower writes nothing). */
  publishResume(note: ResumeNote): void;
  /**
   * The watcher the pushes see: its newest complete checkpoint is reported to node 0 (a follower's progress), and
   * bounded by what every follower reported complete (node 0; a follower sees none, so it pushes nothing).
   */
  pushable(watcher: CheckpointWatcher): CheckpointWatcher;
  /** Ends `stop` when another node's end note appears; writes this node's end note when its own session ends. */
  watchEnds(stop: SessionStop): () => void;
  /**
   * Writes this node's exit note (how its trainer ended, its newest complete checkpoint then, the step its trainer
   * last reported: `reached`); the leader then waits up to `graceMs` for every follower's, and warns where a
   * follower is not known to have reached node 0's newest complete checkpoint (node 0 then pushes at most the step
   * every node is known to have reached).
   */
  exited(
    p: {
      watcher: CheckpointWatcher;
      end: TrainerExit & { killed: boolean };
      exitAt: number;
      stopping: boolean;
      reached: number | null;
    },
    graceMs: number,
  ): Promise<void>;
  /** Leader: why the run is not complete though node 0's trainer is (a follower failed, or its exit is unknown). */
  followersShortfall(): { reason: string; failedCode: number | null } | null;
  /** Leader: writes the run's verdict (a follower writes nothing). */
  publishVerdict(v: VerdictNote): void;
  /** Follower: node 0's verdict, waited for up to `timeoutMs` (null: none came). */
  awaitVerdict(timeoutMs: number): Promise<VerdictNote | null>;
}

/** The session of a single node: it leads and waits for nobody. */
function singleNode(role: NodeRole): NodeSession {
  return {
    role,
    leader: true,
    dir: null,
    awaitResume: async () => null,
    publishResume: () => {},
    pushable: (watcher) => watcher,
    watchEnds: () => () => {},
    exited: async () => {},
    followersShortfall: () => null,
    publishVerdict: () => {},
    awaitVerdict: async () => null,
  };
}

/**
 * Joins the session of several nodes: node 0 starts one (`current.json` names it), a follower joins the one node 0
 * started last, once it is recent and has no verdict yet (waits for it until `signal`; null when stopped meanwhile).
 */
export async function joinNodes(p: {
  o: Pick<SessionOptions, 'nodesDir' | 'outputDir' | 'signal'>;
  role: NodeRole;
  startedAtMs: number;
  tell: Tell;
}): Promise<NodeSession | null> {
  const { role, tell } = p;
  const nodesDir = p.o.nodesDir ?? join(p.o.outputDir, '.soup-nodes');
  const signal = p.o.signal;
  if (role.count === 1) return singleNode(role);
  const hello = { rank: role.rank, count: role.count, host: hostname(), pid: process.pid, source: role.source };
  let current: CurrentNote | null;
  if (role.rank === 0) {
    const session = `${p.startedAtMs}-${hostname().replace(/[^\w.-]/g, '_')}-${process.pid}`;
    current = { session, started_at_ms: p.startedAtMs, host: hostname(), pid: process.pid };
    writeNote(nodesDir, 'current', current);
  } else {
    let waiting = false;
    for (;;) {
      current = readNote<CurrentNote>(nodesDir, 'current');
      const fresh = current !== null && current.started_at_ms >= p.startedAtMs - JOIN_WINDOW_MS;
      if (fresh && readNote(join(nodesDir, current!.session), 'verdict') === null) break;
      if (signal.aborted) return null;
      if (!waiting) tell.say(`node ${role.rank} of ${role.count}: waiting for node 0 in ${tell.show(nodesDir)}`);
      waiting = true;
      await pause(NOTE_POLL_MS, signal);
    }
  }
  const dir = join(nodesDir, current!.session);
  writeNote(dir, `hello-${role.rank}`, hello);
  tell.say(
    role.rank === 0
      ? `node 0 of ${role.count} (${role.source}): leading session ${current!.session} in ${tell.show(dir)}`
      : `node ${role.rank} of ${role.count} (${role.source}): following node 0 (host ${current!.host}, pid ` +
          `${current!.pid}); no lease, no pushes`,
  );
  return manyNodes(role, dir, tell);
}

function manyNodes(role: NodeRole, dir: string, tell: Tell): NodeSession {
  const followers = Array.from({ length: role.count - 1 }, (_, i) => i + 1);
  let reported: number | null | undefined;
  let exits = new Map<number, ExitNote>();
  const waitFor = async <T>(read: () => T | null, timeoutMs: number, signal?: AbortSignal): Promise<T | null> => {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const v = read();
      if (v !== null || Date.now() >= until || signal?.aborted) return v;
      await pause(NOTE_POLL_MS, signal);
    }
  };
  return {
    role,
    leader: role.rank === 0,
    dir,
    async awaitResume(signal) {
      const got = await waitFor(
        () => readNote<ResumeNote>(dir, 'resume') ?? (readNote(dir, 'verdict') === null ? null : ('ended' as const)),
        Number.POSITIVE_INFINITY,
        signal,
      );
      return got === 'ended' ? null : got;
    },
    publishResume: (note) => (role.rank === 0 ? writeNote(dir, 'resume', note) : undefined),
    pushable(watcher) {
      const cap = (): number => {
        if (role.rank !== 0) return -1;
        const known = knownReached(dir);
        return Math.min(...followers.map((r) => known.get(r) ?? -1));
      };
      return {
        ...watcher,
        newestComplete(q) {
          const step = watcher.newestComplete(q)?.checkpoint.step ?? null;
          if (role.rank !== 0 && step !== reported) {
            reported = step;
            writeNote(dir, `progress-${role.rank}`, { rank: role.rank, step });
          }
          return watcher.newestComplete({ ...q, atMost: Math.min(cap(), q.atMost ?? Number.POSITIVE_INFINITY) });
        },
        oldestCompleteAfter(after, q) {
          const c = watcher.oldestCompleteAfter(after, q);
          return c !== null && c.checkpoint.step <= cap() ? c : null;
        },
      };
    },
    watchEnds(stop) {
      let byOther = false;
      const timer = setInterval(() => {
        for (const [rank, note] of readNotes<EndNote>(dir, 'end')) {
          if (rank === role.rank || stop.reason !== null) continue;
          byOther = true;
          stop.end(`node ${rank} ended the session (${note.reason})`);
        }
      }, NOTE_POLL_MS);
      void stop.stopped.then(() => {
        if (!byOther) writeNote(dir, `end-${role.rank}`, { rank: role.rank, reason: stop.reason });
      });
      return () => clearInterval(timer);
    },
    async exited({ watcher, end, exitAt, stopping, reached }, graceMs) {
      const newest = watcher.newestComplete({ asOfMs: exitAt, trainerExited: !end.killed })?.checkpoint ?? null;
      const exit = { step: newest?.step ?? null, reached, code: end.code, signal: end.signal, stopping };
      writeNote(dir, `exit-${role.rank}`, { rank: role.rank, ...exit });
      if (role.rank !== 0) return;
      const all = (): Map<number, ExitNote> | null => {
        const got = readNotes<ExitNote>(dir, 'exit');
        return followers.every((r) => got.has(r)) ? got : null;
      };
      const t = Date.now();
      exits = (await waitFor(all, graceMs)) ?? readNotes<ExitNote>(dir, 'exit');
      const missing = followers.filter((r) => !exits.has(r));
      if (missing.length === 0) tell.say(`every node's trainer has exited (waited ${Date.now() - t} ms)`);
      else tell.warn(`no exit note from node ${missing.join(', ')} within --grace: its trainer's exit is unknown`);
      if (newest !== null) warnUnknownReach(newest.step, followers, knownReached(dir), tell);
    },
    followersShortfall() {
      for (const r of followers) {
        const e = exits.get(r);
        if (e === undefined)
          return { reason: `node ${r}'s trainer exit is unknown (no exit note within --grace)`, failedCode: null };
        if (e.stopping === true && e.code === 0)
          return { reason: `node ${r}'s session ended before node 0's (its trainer stopped)`, failedCode: null };
        if (e.code !== 0) {
          const how = e.code === null || e.code === undefined ? `signal ${e.signal}` : `exit code ${e.code}`;
          return { reason: `node ${r}'s trainer ended with ${how}`, failedCode: e.stopping ? null : (e.code ?? 1) };
        }
      }
      return null;
    },
    publishVerdict: (v) => (role.rank === 0 ? writeNote(dir, 'verdict', v) : undefined),
    awaitVerdict: (timeoutMs) => waitFor(() => readNote<VerdictNote>(dir, 'verdict'), timeoutMs),
  };
}

/**
 * The newest step each follower is known to have reached (-1: none): the newest complete checkpoint it reported
 * (`progress`, then `exit`), or the step its trainer last reported at its exit. Either is that node's own evidence;
 * the higher one counts, so a late note naming an older checkpoint never lowers what was already known.
 */
function knownReached(dir: string): Map<number, number> {
  const out = new Map<number, number>();
  for (const notes of [readNotes<ExitNote>(dir, 'progress'), readNotes<ExitNote>(dir, 'exit')])
    for (const [r, n] of notes) out.set(r, Math.max(out.get(r) ?? -1, n.step ?? -1, n.reached ?? -1));
  return out;
}

/** Says which follower keeps node 0's newest complete checkpoint, `newest`, from being pushed, and why. */
function warnUnknownReach(newest: number, followers: number[], known: Map<number, number>, tell: Tell): void {
  for (const r of followers) {
    const k = known.get(r) ?? -1;
    if (k >= newest) continue;
    tell.warn(
      `node ${r} is known to have reached ${k < 0 ? 'no step' : `step ${k} only`} (its newest complete checkpoint ` +
        `and its trainer's reported steps): whether every rank reached step ${newest} is unknown; node 0 pushes ` +
        `${k < 0 ? 'nothing newer' : `at most step ${k}`}`,
    );
  }
}

/** A follower's view of the store: reads pass, every write is refused (only node 0 writes). */
export function followerStore(store: CheckpointStore, rank: number): CheckpointStore {
  const refuse = async (): Promise<never> => {
    throw new SupervisorUsageError(`node ${rank} is a follower: only node 0 writes to ${store.description}`, {
      field: 'nodeRank',
    });
  };
  return {
    kind: store.kind,
    description: store.description,
    exists: () => store.exists(),
    create: refuse,
    list: (q) => store.list(q),
    stat: (q) => store.stat(q),
    readFile: (q) => store.readFile(q),
    hash: (q) => store.hash(q),
    download: (q) => store.download(q),
    commit: refuse,
  };
}
