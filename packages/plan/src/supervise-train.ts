// One session of soup's own trainer under supervise(): after the resume, this device's run, the segment and the
// child's job (written before the launch, and again at each out-of-memory step-down, which the relaunched child
// records in every checkpoint it writes); the session's facts at the end. The caller says the lines.
import { planSegment, StoreError, type SegmentPlan } from '@soup/hub-ckpt';
import type { TrainJob } from '@soup/onnx-train';
import {
  previousMicroBatch,
  supervise,
  type MicroSession,
  type OomStepDown,
  type SuperviseOptions,
} from '@soup/supervisor';
import { mkdirSync, writeFileSync } from 'node:fs';
import type { PreparedRun } from './prepare-run';
import type { SessionMemoryWatch } from './session-memory-watch';
import { stepDownOptions } from './step-down-options';
import { trainBudgetHold } from './train-budget-hold';
import { resumeTrainFacts, type TrainFacts } from './train-facts';
import { trainJobOf } from './train-job-of';
import { trainPathsOf, trainSuperviseOptions, type TrainSuperviseOptionsOptions } from './train-supervise-options';

/** Options of {@link superviseTrain}. */
export interface SuperviseTrainOptions extends TrainSuperviseOptionsOptions {
  /** What every session passes supervise(): the store, where it runs, how a refusal is explained, its lease. */
  session: Pick<
    SuperviseOptions,
    'store' | 'storeName' | 'cwd' | 'env' | 'signal' | 'startedAtMs' | 'refusal' | 'leaseWait' | 'takeOverLease'
  >;
  /** The run's identity, recorded in every checkpoint. */
  identity: Record<string, unknown>;
  /** Base of the config's relative paths. */
  cwd: string;
  pushEvery: number;
  maxOomRetries: number;
  /** `--max-memory` as typed (a size, or a fraction of the budget). */
  maxMemory: string | undefined;
  /** The session's facts: filled here (the start, the run, the segment, the outcome) and by the listeners. */
  facts: TrainFacts;
  memory: SessionMemoryWatch;
  /** After the resume: this device's run (a caller's prepareRun, saying its own lines). */
  prepare(resumed: { resumeFrom: string | null; step: number | null }): Promise<PreparedRun>;
  /** The segment this session trains, before the launch. */
  onSegment(p: { prepared: PreparedRun; plan: SegmentPlan; sessions: MicroSession[] }): void;
  listeners: Pick<SuperviseOptions, 'onEvent' | 'onStdout' | 'onStderr'>;
}

/**
 * Runs one session (see the file comment). A store that cannot be reached for final/ after the run trained to its
 * horizon is a fact (`finalError`), not a throw: the caller says what is kept where.
 */
export async function superviseTrain(o: SuperviseTrainOptions): Promise<void> {
  const { config, facts: s } = o;
  const { jobPath, finalDir } = trainPathsOf(config.output);
  let job: TrainJob | null = null;
  const writeJob = (): void => writeFileSync(jobPath, `${JSON.stringify(job, null, 2)}\n`);
  try {
    s.r = await supervise({
      ...trainSuperviseOptions(o),
      ...o.session,
      async resolveMicroBatchSize(resumed) {
        const sessions = resumeTrainFacts(s, resumed);
        const prepared = await o.prepare(resumed);
        s.prepared = prepared;
        const plan = planSegment({
          horizon: config.training.steps,
          pushEvery: o.pushEvery,
          stopAfterSteps: o.stopAfterSteps,
          startStep: s.startStep,
        });
        s.plan = plan;
        job = trainJobOf({
          config,
          prepared,
          plan,
          cwd: o.cwd,
          runId: o.runId,
          identity: o.identity,
          finalDir,
          startStep: s.startStep,
          sessionsBefore: sessions,
        });
        mkdirSync(config.output, { recursive: true });
        o.onSegment({ prepared, plan, sessions });
        writeJob();
        await o.memory.hold(trainBudgetHold(prepared, o.maxMemory));
        return {
          microBatchSize: prepared.microBatchSize,
          source: prepared.batchSource,
          previous: previousMicroBatch(sessions),
        };
      },
      ...stepDownOptions({
        globalBatchSize: config.training.batchSize,
        worldSize: 1,
        maxOomRetries: o.maxOomRetries,
        onOomStepDown: (d: OomStepDown) => {
          // The relaunched child records this session's step-downs in every checkpoint it writes.
          if (job !== null) {
            job.session.oom_step_downs.push(d);
            writeJob();
          }
        },
      }),
      memory: o.memory.watch,
      ...o.listeners,
      // The closing sentence is a fact of the session: trainEndOf says it where the session's end is said.
      onEvent: (e) => {
        if (e.topic === 'outcome') s.closing = e.line;
        o.listeners.onEvent?.(e);
      },
    });
  } catch (err) {
    // A store outage at final/: the run is trained.
    if (s.atHorizon && err instanceof StoreError) {
      s.finalError = err;
      return;
    }
    throw err;
  }
  s.memory = o.memory.report(s.r.memory);
  const tuned = s.prepared?.tuneMemory ?? null;
  if (s.memory !== null && tuned !== null)
    s.memory.tuning = { peak_bytes: tuned.peakBytes, in_session_peak: false, resident_at_reset_bytes: null };
}
