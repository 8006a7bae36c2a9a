// The nodes agree on one micro-batch through a folder they all share (the nodes folder, e.g.
// <output_dir>/.soup-nodes): each writes micro-<rank>.json = {rank, host, m, budget, session} by an atomic rename,
// then reads all `count` of them; a missing one after the timeout is an error naming its rank. `session` keeps a
// previous session's answer from counting: a node only reads answers written for the step it resumes from.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { type AgreedMicroBatch, agreeMicroBatch, type NodeMicroAnswer } from './agree-micro-batch';
import { MicroAgreementError } from './errors';
import type { SessionOptions } from './supervise-options';

type ResolveMicroBatchSize = NonNullable<SessionOptions['resolveMicroBatchSize']>;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function readAnswer(dir: string, rank: number, session: string): NodeMicroAnswer | null {
  try {
    const a = JSON.parse(readFileSync(join(dir, `micro-${rank}.json`), 'utf8')) as NodeMicroAnswer & {
      session?: string;
    };
    if (a.session !== session || a.rank !== rank || !Number.isSafeInteger(a.m) || a.m < 1) return null;
    return { rank: a.rank, host: String(a.host), m: a.m, budget: typeof a.budget === 'number' ? a.budget : null };
  } catch {
    return null; // not written yet
  }
}

/**
 * Writes this node's answer into `dir` and waits for every node's (ranks 0 … count − 1), in rank order.
 * @throws {MicroAgreementError} some answers missing after `timeoutMs` (`missingRanks`)
 */
export async function exchangeMicroAnswers(p: {
  dir: string;
  answer: NodeMicroAnswer;
  count: number;
  /** Which session the answers belong to (e.g. the step every node resumes from). */
  session: string;
  /** @default 60000 */
  timeoutMs?: number;
  /** @default 100 */
  pollMs?: number;
}): Promise<NodeMicroAnswer[]> {
  const { dir, answer, count, session } = p;
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `micro-${answer.rank}.json`);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify({ ...answer, session }));
  renameSync(tmp, file);
  const timeoutMs = p.timeoutMs ?? 60_000;
  const until = Date.now() + timeoutMs;
  for (;;) {
    const got = Array.from({ length: count }, (_, r) => readAnswer(dir, r, session));
    const missing = got.flatMap((a, r) => (a === null ? [r] : []));
    if (missing.length === 0) return got as NodeMicroAnswer[];
    if (Date.now() >= until)
      throw new MicroAgreementError(
        `micro-batch agreement: no answer from node${missing.length > 1 ? 's' : ''} ${missing.join(', ')} in ${dir} ` +
          `within ${+(timeoutMs / 1000).toFixed(1)} s (each node writes micro-<rank>.json there once its ` +
          'probe answers; is every node started, with the same nodes folder?)',
        { missingRanks: missing },
      );
    await sleep(p.pollMs ?? 100);
  }
}

/**
 * Wraps a `resolveMicroBatchSize` (this node's cache, then probe) so that every node trains the smallest m any node
 * answered, said in one line (`micro-batch 4: node 1 (b) fits least (budget 300 MiB)`). One node: the answer as is.
 */
export function agreeAcrossNodes(p: {
  resolve: ResolveMicroBatchSize;
  /** This node's rank and the node count; `dir`: the shared nodes folder. */
  nodes: { rank: number; count: number; dir: string };
  /** The budget this node's probe measures against, in bytes; null: the device's free memory. */
  budgetBytes: number | null;
  globalBatchSize: number;
  worldSize: number;
  say: (line: string) => void;
  /** @default hostname() */
  host?: string;
  timeoutMs?: number;
  onAgreed?: (agreed: AgreedMicroBatch) => void;
}): ResolveMicroBatchSize {
  const { nodes } = p;
  if (nodes.count <= 1) return p.resolve;
  return async (resumed) => {
    const mine = await p.resolve(resumed);
    const answers = await exchangeMicroAnswers({
      dir: nodes.dir,
      answer: { rank: nodes.rank, host: p.host ?? hostname(), m: mine.microBatchSize, budget: p.budgetBytes },
      count: nodes.count,
      session: `resume-${resumed.step ?? 0}`,
      ...(p.timeoutMs !== undefined ? { timeoutMs: p.timeoutMs } : {}),
    });
    const agreed = agreeMicroBatch({ answers, globalBatchSize: p.globalBatchSize, worldSize: p.worldSize });
    p.say(agreed.line);
    p.onAgreed?.(agreed);
    const decided = agreed.decidedBy.rank === nodes.rank;
    return {
      ...mine,
      microBatchSize: agreed.microBatchSize,
      source: decided ? mine.source : `node ${agreed.decidedBy.rank}`,
    };
  };
}
