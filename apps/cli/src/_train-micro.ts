// soup train's micro-batch for one session: its line (`micro 4 × 4 = 16 (was 16 × 1 last
// session)`), the step that steps m down on an allocation failure, what soup_run.json and
// RUN_JSON record, and the session's peak memory.
import { formatMicroBatch } from '@soup/batch-probe';
import { reachableMemory } from '@soup/cuda-probe';
import type { Trainer, TrainerStepLog, TrainBatch } from '@soup/onnx-train';
import type { PreparedRun } from './_prepare';
import { describeMicroBatch, type MicroSession, type OomStepDown } from './_micro-sessions';
import { stepOomLine, stepWithStepDown } from './_oom-step-down';
import { SessionPeak, resolveMaxMemory, type SessionPeakReport } from './_session-peak';
import { UsageError } from './errors';
import { formatBytes } from './format-bytes';
import { parseBytes } from './parse-bytes';

/** The micro-batch of this session, and the sessions before it. */
export interface TrainMicro {
  /** The line the session starts with. */
  describe(): string;
  /** One trainer step; an allocation failure steps m down (next divisor of G) and redoes it. */
  step(trainer: Trainer, opts: { maxOomRetries?: number }, log: (line: string) => void): Promise<TrainerStepLog>;
  /** soup_run.json's fields: m, a, `m × a = G` and every session's m and a. */
  record(m: number): Record<string, unknown>;
  /** RUN_JSON's fields. */
  runJson(m: number): {
    micro_batch_size: number;
    grad_accum: number;
    micro_batch: string;
    oom_step_downs: OomStepDown[];
  };
}

/** Default of `--max-oom-retries`. */
export const MAX_OOM_RETRIES = 3;

export function startMicro(o: { prepared: PreparedRun; resumed: MicroSession[]; startStep: number }): TrainMicro {
  const G = o.prepared.globalBatchSize;
  const stepDowns: OomStepDown[] = [];
  const session = (m: number): MicroSession => ({
    start_step: o.startStep + 1,
    micro_batch_size: m,
    grad_accum: G / m,
    source: o.prepared.batchSource,
    oom_step_downs: stepDowns,
  });
  return {
    describe: () =>
      describeMicroBatch(
        { microBatchSize: o.prepared.microBatchSize, accumulation: o.prepared.accumulation },
        o.resumed.at(-1),
      ),
    async step(trainer, opts, log) {
      const max = opts.maxOomRetries ?? MAX_OOM_RETRIES;
      return stepWithStepDown({
        step: () => trainer.step(),
        globalBatchSize: G,
        microBatchSize: () => trainer.microBatchSize,
        // Rebuilt: the failed run's memory arenas are released with its sessions.
        setMicroBatchSize: (m) => trainer.stepDown(m),
        stepNumber: trainer.state.step + 1,
        retriesLeft: () => max - stepDowns.length,
        onStepDown: (s) => {
          stepDowns.push(s);
          log(
            `out of memory at step ${s.step} with micro ${formatMicroBatch({ microBatchSize: s.from, accumulation: G / s.from })} (${s.error}): ` +
              `redoing the step with micro ${formatMicroBatch({ microBatchSize: s.to, accumulation: G / s.to })} (step-down ${stepDowns.length} of at most ${max})`,
          );
        },
      });
    },
    record: (m) => ({
      micro_batch_size: m,
      grad_accum: G / m,
      micro_batch: formatMicroBatch({ microBatchSize: m, accumulation: G / m }),
      sessions: [...o.resumed, session(m)],
    }),
    runJson: (m) => ({
      micro_batch_size: m,
      grad_accum: G / m,
      micro_batch: formatMicroBatch({ microBatchSize: m, accumulation: G / m }),
      oom_step_downs: stepDowns,
    }),
  };
}

/** The session's peak tracker: the budget is training.memory_budget, else what this process could reach at the start. */
export function sessionPeak(
  opts: { maxMemory?: string },
  prepared: PreparedRun,
  warn: (line: string) => void,
): SessionPeak {
  let budgetBytes = prepared.budgetBytes;
  let budgetSource: 'memory_budget' | 'reachable' | null = budgetBytes !== null ? 'memory_budget' : null;
  if (budgetBytes === null && prepared.identity.device !== 'cuda') {
    try {
      budgetBytes = reachableMemory().bytes + process.memoryUsage.rss();
      budgetSource = 'reachable';
    } catch {
      budgetBytes = null;
    }
  }
  const maxMemoryBytes = resolveMaxMemory(opts.maxMemory, budgetBytes, parseBytes);
  if (opts.maxMemory !== undefined && maxMemoryBytes === null) {
    throw new UsageError(
      `--max-memory ${opts.maxMemory}: give a size like 6GiB, or a fraction like 0.9 or 90% of the budget (a fraction needs a known budget: set training.memory_budget)`,
    );
  }
  return new SessionPeak({ budgetBytes, budgetSource, maxMemoryBytes, warn, tuning: prepared.tuneMemory });
}

/** The summary line: peak, where, budget, headroom. */
export function describePeak(r: SessionPeakReport | null): string {
  if (r === null || r.peak_bytes === null) return 'memory: peak unknown (no /proc/self/status on this system)';
  const budget =
    r.budget_bytes === null
      ? 'budget unknown'
      : `budget ${formatBytes(r.budget_bytes)} (${r.budget_source === 'memory_budget' ? 'training.memory_budget' : 'reachable at the start'}), headroom ${formatBytes(r.headroom_bytes)}`;
  const max =
    r.max_memory_bytes === null
      ? ''
      : r.max_memory_passed_at
        ? `; passed --max-memory ${formatBytes(r.max_memory_bytes)} at ${r.max_memory_passed_at}`
        : `; under --max-memory ${formatBytes(r.max_memory_bytes)}`;
  const t = r.tuning;
  const tuning =
    t === undefined || t.peak_bytes === null
      ? ''
      : t.in_session_peak
        ? `; it includes the tuner's timing sessions (${formatBytes(t.peak_bytes)} through tuning: the high-water mark could not be reset after it)`
        : `; before it, the tuner's timing sessions took this process to ${formatBytes(t.peak_bytes)} (measured apart: the high-water mark was reset after tuning${t.resident_at_reset_bytes === null ? '' : `, to the ${formatBytes(t.resident_at_reset_bytes)} resident then`})`;
  return `memory: session peak ${formatBytes(r.peak_bytes)} (this process's resident memory, VmHWM) at ${r.peak_at}; ${budget}${max}${tuning}`;
}

/**
 * The validation batches cut into micro-batches of at most m sequences (the last piece of a batch
 * that m does not divide is smaller): validation never asks for more memory than a training micro-batch.
 */
export function microBatchesOf(batches: readonly TrainBatch[], m: number): TrainBatch[] {
  const out: TrainBatch[] = [];
  for (const b of batches) {
    if (b.batchSize <= m) {
      out.push(b);
      continue;
    }
    const rows = b.inputIds.length / b.batchSize;
    for (let i = 0; i < b.batchSize; i += m) {
      const n = Math.min(m, b.batchSize - i);
      out.push({
        batchSize: n,
        inputIds: b.inputIds.subarray(i * rows, (i + n) * rows),
        labels: b.labels.subarray(i * rows, (i + n) * rows),
      });
    }
  }
  return out;
}

/**
 * Mean validation loss over `batches` (weighted by sequences). An allocation failure is answered
 * with what failed, not thrown: the run's training is done, and its weights are worth keeping.
 */
export async function validate(
  trainer: { trainStep: { evaluate(b: TrainBatch): Promise<number> } },
  batches: readonly TrainBatch[],
): Promise<{ loss: number; windows: number } | { oom: string; batchSize: number }> {
  let weighted = 0;
  let windows = 0;
  for (const b of batches) {
    let loss: number;
    try {
      loss = await trainer.trainStep.evaluate(b);
    } catch (err) {
      const line = stepOomLine(err);
      if (line === null) throw err;
      return { oom: line, batchSize: b.batchSize };
    }
    weighted += loss * b.batchSize;
    windows += b.batchSize;
  }
  return { loss: weighted / windows, windows };
}
