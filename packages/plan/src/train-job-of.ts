// The job soup's own trainer child reads at each launch: the run made concrete for this device and this segment.
import type { SoupConfig } from '@soup/config';
import type { SegmentPlan } from '@soup/hub-ckpt';
import type { TrainJob } from '@soup/onnx-train';
import type { MicroSession } from '@soup/supervisor';
import type { PreparedRun } from './prepare-run';
import { trainerOptionsOf } from './trainer-options';

/** Options of {@link trainJobOf}. */
export interface TrainJobOfOptions {
  config: SoupConfig;
  prepared: PreparedRun;
  /** The segment this session trains (@soup/hub-ckpt's planSegment). */
  plan: SegmentPlan;
  cwd: string;
  runId: string;
  identity: Record<string, unknown>;
  /** Where final/ is written at the horizon. */
  finalDir: string;
  /** The step this session starts from (0: fresh). */
  startStep: number;
  /** The sessions the resumed checkpoint records (none for a fresh run). */
  sessionsBefore: MicroSession[];
}

/** The child's job: everything but m and the checkpoint to resume from (the supervisor's placeholders). */
export function trainJobOf(p: TrainJobOfOptions): TrainJob {
  const { config, prepared, plan } = p;
  return {
    trainer: trainerOptionsOf(config, prepared, p.cwd, p.runId),
    saveSteps: plan.pushSteps,
    stopStep: plan.stopStep,
    finalDir: p.finalDir,
    val: config.data.valPath
      ? { path: config.data.valPath, maxLength: config.data.maxLength, batches: config.training.valBatches }
      : null,
    record: {
      run: p.runId,
      identity: p.identity,
      batch_size: config.training.batchSize,
      batch_source: prepared.batchSource,
      grad_ckpt: prepared.tier.granularity ?? false,
    },
    sessionsBefore: p.sessionsBefore,
    session: { start_step: p.startStep + 1, source: prepared.batchSource, oom_step_downs: [] },
  };
}
