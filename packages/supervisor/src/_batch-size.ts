// The session's batch: a fixed {batch_size} (flag, the run's first session, or a probe), or with a global batch G
// this device's micro-batch m and the session entry soup_run.json records.
import { SupervisorUsageError } from './errors';
import type { SupervisedResume } from './resume-supervised';
import type { RunRecord, SupervisedSession } from './run-identity';
import type { SessionFacts, SessionOptions } from './supervise-options';
import { placeholdersIn } from './trainer-child';
import type { Tell } from './_tell';
import { describeMicroBatch } from './describe-micro-batch';

/** What the trainer gets: `batchSize` ({batch_size}), and with G the micro-batch, its levers and the session entry. */
export interface SessionBatch {
  batchSize: number | null;
  micro: number | null;
  levers: Record<string, string>;
  session: SupervisedSession | null;
}

/** Resolves the session's batch and fills `facts` (batchSize, batchSource, previousSession). */
export async function resolveBatch(p: {
  o: SessionOptions;
  record: RunRecord | null;
  G: number | null;
  worldSize: number;
  startedAtMs: number;
  resumed: SupervisedResume;
  facts: SessionFacts;
  tell: Tell;
}): Promise<SessionBatch> {
  const { o, record, G, worldSize, resumed, facts } = p;
  const { say, warn } = p.tell;
  const t0 = p.startedAtMs;
  let batchSize: number | null = null;
  const batchOpt = o.batchSize ?? null;
  if (batchOpt !== null) {
    if (batchOpt !== 'auto') batchSize = batchOpt;
    if (record?.batch_size != null && batchOpt === 'auto') {
      batchSize = record.batch_size;
      say(
        `batch size ${batchSize} (chosen by this run's first session, kept so the run computes the same numbers)`,
        'batch',
      );
    } else if (record?.batch_size != null && batchSize !== record.batch_size) {
      warn(
        `--batch-size ${batchSize} differs from the ${record.batch_size} this run started with: the resumed ` +
          `run will not match an uninterrupted one`,
      );
    }
    if (batchSize === null) {
      if (!o.probeBatchSize)
        throw new SupervisorUsageError(
          '--batch-size auto needs a probe (probeBatchSize) when the run has no recorded size',
          { field: 'batchSize' },
        );
      batchSize = await o.probeBatchSize();
    }
  }
  facts.batchSize = batchSize;
  facts.batchSource =
    batchOpt === null
      ? null
      : batchOpt !== 'auto'
        ? 'flag'
        : record?.batch_size != null && batchSize === record.batch_size
          ? 'checkpoint'
          : 'probe';
  // 4b. Global batch: this device's m (cache, then probe), G kept; recorded per session.
  let session: SupervisedSession | null = null;
  let micro: number | null = null;
  let levers: Record<string, string> = {};
  if (G !== null) {
    const r = await o.resolveMicroBatchSize!({
      resumeFrom: resumed.outcome === 'resume' ? resumed.resumeFrom : null,
      step: facts.startStep,
    });
    micro = r.microBatchSize;
    levers = r.levers ?? {};
    for (const name of Object.keys(levers)) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) || placeholdersIn([`{${name}}`]).size > 0)
        throw new SupervisorUsageError(
          `lever ${JSON.stringify(name)}: a lever is a plain name that is not one of soup's own placeholders`,
          { field: 'resolveMicroBatchSize' },
        );
    }
    const perRank = G / worldSize;
    if (!Number.isSafeInteger(micro) || micro < 1 || perRank % micro !== 0) {
      throw new SupervisorUsageError(
        `micro-batch ${micro} does not divide G / world size = ${perRank}: m × a × N must equal G`,
        { field: 'resolveMicroBatchSize' },
      );
    }
    batchSize = micro;
    facts.batchSize = G;
    facts.batchSource = r.source;
    facts.previousSession = record?.sessions?.at(-1) ?? null;
    session = {
      started_at: new Date(t0).toISOString(),
      start_step: facts.startStep,
      micro_batch_size: micro,
      grad_accum: perRank / micro,
      world_size: worldSize,
      source: r.source,
      ...(Object.keys(levers).length > 0 ? { levers } : {}),
      oom_step_downs: facts.oomStepDowns,
      memory: null,
    };
    const prev =
      facts.previousSession ??
      (r.previous ? { micro_batch_size: r.previous.microBatchSize, grad_accum: r.previous.gradAccum } : null);
    const chosen = Object.entries(levers).map(([k, v]) => `${k}=${v}`);
    say(
      `${describeMicroBatch({ microBatchSize: micro, accumulation: perRank / micro, worldSize }, prev)} (${r.source})` +
        `${chosen.length > 0 ? `, ${chosen.join(', ')}` : ''}`,
      'batch',
    );
  }
  return { batchSize, micro, levers, session };
}
