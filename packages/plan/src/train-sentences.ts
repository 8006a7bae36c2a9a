// soup train's sentences about its own run, next to the facts they describe: how the run starts, the segment a
// session trains, the trainer child's reports (@soup/onnx-train's TrainReport) and the session's end. The caller
// decides where each line goes (stdout, a warning, the progress bar) and styles it.
import type { SoupConfig } from '@soup/config';
import type { SegmentPlan } from '@soup/hub-ckpt';
import type { TrainReport } from '@soup/onnx-train';
import { describeMicroBatch, type MicroSession } from '@soup/supervisor';
import type { PreparedRun } from './prepare-run';
import type { TrainFacts } from './train-facts';

/**
 * The run's opening lines: what it trains, to which horizon, where its checkpoints go; and, for a run extended past
 * its learning-rate schedule, how the rate goes past it.
 */
export function describeTrainStart(p: {
  runId: string;
  config: SoupConfig;
  pushEvery: number;
  storeName: string;
}): string[] {
  const { config } = p;
  const horizon = config.training.steps;
  const schedule = config.training.scheduleSteps;
  const lines = [
    `run ${p.runId}: ${config.base}, ${horizon} step${horizon === 1 ? '' : 's'}, checkpoints every ${p.pushEvery} ` +
      `to ${p.storeName}`,
  ];
  if (schedule !== null && schedule < horizon)
    lines.push(
      `the learning rate follows the schedule of ${schedule} steps, then stays at its minimum to step ${horizon}`,
    );
  return lines;
}

/**
 * The segment this session trains: its steps, the batch and micro-batch (and where m came from), the checkpointing
 * tier, the offload, the device, and where it stops. `show` names a path as the caller shows paths.
 */
export function describeTrainSegment(p: {
  config: SoupConfig;
  prepared: PreparedRun;
  plan: SegmentPlan;
  sessions: readonly MicroSession[];
  show: (path: string) => string;
}): string {
  const { config, prepared, plan } = p;
  const micro = describeMicroBatch(
    { microBatchSize: prepared.microBatchSize, accumulation: prepared.accumulation },
    p.sessions.at(-1),
  );
  const offload = prepared.offload
    ? `offload ${prepared.offload.target}` +
      `${prepared.offload.saveDir ? ` to ${p.show(prepared.offload.saveDir)}` : ''} (segmented), `
    : '';
  return (
    `training steps ${plan.startStep + 1}..${plan.stopStep} of ${config.training.steps}: ` +
    `batch ${config.training.batchSize} × ${config.data.maxLength} tokens, ${micro} (${prepared.batchSource}), ` +
    `checkpointing ${prepared.tier.description}, ${offload}${prepared.identity.gpuName}; ` +
    (plan.segmentStop ? `stops at step ${plan.stopStep} (segment boundary)` : 'runs to the horizon')
  );
}

/**
 * One report of the trainer child: `status` is a step's progress text (loss, learning rate, micro-batch), `info` a
 * line, `warn` a warning; null for the reports that are not said (ready, begin). `valPath` names data.val.
 */
export function describeTrainReport(
  r: TrainReport,
  valPath: string | null,
): { level: 'status' | 'info' | 'warn'; line: string } | null {
  switch (r.event) {
    case 'ready':
    case 'begin':
      return null;
    case 'step':
      return {
        level: 'status',
        line: `loss ${r.loss.toFixed(3)}  lr ${r.lr.toExponential(1)}  ${describeMicroBatch(r, null)}`,
      };
    case 'validation':
      return { level: 'info', line: `validation loss ${r.loss.toFixed(4)} over ${r.windows} sequences` };
    case 'validation-oom':
      return {
        level: 'warn',
        line:
          `validation loss unknown: out of memory at a validation batch of ${r.batchSize} (${r.error}); ` +
          'the trained weights are kept and pushed as final/',
      };
    case 'validation-empty':
      return {
        level: 'warn',
        line: `${valPath}: data.val has ${r.bytes} bytes, fewer than max_length + 1: no validation`,
      };
  }
}

/**
 * The session end as the trainer exits (or before it ran a step): at which step, and whether that step is saved and
 * pushed now, already pushed (a push boundary), or none was run. `timeLimit` is the time limit as the caller shows it
 * (`--time-limit 5m reached`).
 */
export function describeSessionEnd(
  s: Pick<TrainFacts, 'ended' | 'startStep' | 'lastStep' | 'plan'>,
  timeLimit: string,
): string {
  const reason = s.ended?.reason ?? 'abort';
  const why = reason === 'time-limit' ? `--time-limit ${timeLimit} reached` : reason;
  const step = s.lastStep;
  const head = `session end (${why}) at step ${step}: `;
  if (step > s.startStep && !(s.plan?.pushSteps.includes(step) ?? false))
    return `${head}saving checkpoint-${step} and pushing it`;
  return (
    head +
    `${step === s.startStep ? 'no step was run this session' : `checkpoint-${step} is already pushed`}` +
    '; nothing new to push'
  );
}
