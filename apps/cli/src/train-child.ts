// soup train's trainer, as a child process the supervisor runs under the trainer contract every trainer
// keeps: `checkpoint-<step>/` folders whose trainer_state.json holds global_step and max_steps, a resume from
// `--resume-from`, a save of the step it is on at SIGTERM, exit 0 at its stop step (at the horizon after
// validation and final/). Every session rule (resume, pushes, session end, lease, step-down, peak) is the
// supervisor's; this process only trains, so a kernel OOM kill of it takes nothing else down.
//   node train-child.js <job.json> --output-dir <dir> --micro-batch-size <m> [--resume-from <dir>]
import { stepOomLine } from '@soup/cuda-probe';
import { DiskFullError, isDiskFull } from '@soup/hub-ckpt';
import { sequentialBatches, Trainer, type TrainerStepLog } from '@soup/onnx-train';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { formatMicroBatch } from '@soup/batch-probe';
import { readTrainJob, REPORT_PREFIX, type TrainReport } from './_train-job';
import { microBatchesOf, validate } from './_train-micro';
import { EXIT_CODES, exitCodeFor } from './exit-codes';

const t0 = performance.now();
// The session's end arrives as SIGTERM (the supervisor's stop signal): the step running completes, is saved, and
// no step starts after it. Installed first, so a signal during start-up is a stop too.
let stopping = false;
for (const sig of ['SIGTERM', 'SIGINT'] as const) process.on(sig, () => (stopping = true));

const report = (r: TrainReport): void => void process.stdout.write(`${REPORT_PREFIX}${JSON.stringify(r)}\n`);

function arg(name: string): string | null {
  const i = process.argv.indexOf(name);
  return i >= 0 ? (process.argv[i + 1] ?? null) : null;
}

/** Fails the child with `code`, the message on stderr (the supervisor names its last line). */
function fail(message: string, code: number): never {
  process.stderr.write(`soup: ${message}\n`);
  process.exit(code);
}

async function main(): Promise<number> {
  const jobPath = process.argv[2]!;
  const job = readTrainJob(jobPath);
  const outputDir = arg('--output-dir')!;
  const m = Number(arg('--micro-batch-size'));
  const resumeFrom = arg('--resume-from');
  const options = { ...job.trainer, microBatchSize: m };
  const trainer = resumeFrom
    ? await Trainer.fromCheckpoint({ ...options, dir: resumeFrom })
    : await Trainer.create(options);
  const G = job.trainer.batchSize;
  const paramBytes =
    trainer.trainStep.model.params.reduce((a, p) => a + p.shape.reduce((x, y) => x * y, 1), 0) *
    (trainer.trainStep.dtype === 'float64' ? 8 : 4);
  const record = (extra: Record<string, unknown> = {}): string =>
    `${JSON.stringify(
      {
        ...job.record,
        micro_batch_size: m,
        grad_accum: G / m,
        micro_batch: formatMicroBatch({ microBatchSize: m, accumulation: G / m }),
        sessions: [...job.sessionsBefore, { ...job.session, micro_batch_size: m, grad_accum: G / m }],
        ...extra,
      },
      null,
      2,
    )}\n`;
  const save = (dir: string, extra: Record<string, unknown> = {}): void => {
    try {
      trainer.saveCheckpoint(dir);
      writeFileSync(join(dir, 'soup_run.json'), record(extra));
    } catch (err) {
      if (!isDiskFull(err)) throw err;
      // Weights, then AdamW's two moments, each the size of the weights.
      throw new DiskFullError({ path: dir, bytesNeeded: 3 * paramBytes, what: `saving ${dir}`, cause: err });
    }
  };
  const checkpoint = (step: number): string => join(outputDir, `checkpoint-${step}`);
  const saveSteps = new Set(job.saveSteps);
  const startStep = trainer.state.step;
  report({ event: 'ready', resumedAt: startStep, startupMs: Math.round(performance.now() - t0) });
  let saved = startStep;
  try {
    while (trainer.state.step < job.stopStep) {
      // A step runs inside ONNX Runtime: the signal's handler waits for the event loop.
      await new Promise<void>((r) => setImmediate(r));
      if (stopping) break;
      // Said before the step: a peak or an out-of-memory failure while it runs is placed at it.
      report({ event: 'begin', step: trainer.state.step + 1 });
      const stepT0 = performance.now();
      let log: TrainerStepLog;
      try {
        log = await trainer.step();
      } catch (err) {
        // Out of memory: the supervisor judges the line, steps m down and resumes from the newest checkpoint.
        const line = stepOomLine(err);
        if (line !== null) {
          process.stderr.write(`${line}\n`);
          process.exit(EXIT_CODES.train);
        }
        throw err;
      }
      const ms = performance.now() - stepT0;
      if (!Number.isFinite(log.loss))
        fail(
          `the loss is ${log.loss} at step ${log.step}: lower training.lr or raise training.warmup_steps`,
          EXIT_CODES.train,
        );
      report({
        event: 'step',
        step: log.step,
        loss: log.loss,
        lr: log.lr,
        microBatchSize: log.microBatchSize,
        accumulation: log.accumulation,
        tokensConsumed: log.tokensConsumed,
        ms,
      });
      if (saveSteps.has(log.step)) {
        save(checkpoint(log.step));
        saved = log.step;
      }
    }
    const step = trainer.state.step;
    // The session ends: the step it is on is saved (unless it was saved at a boundary already).
    if (stopping && step > saved) save(checkpoint(step));
    if (!stopping && step >= job.trainer.totalSteps)
      await finish(trainer, job.val, (extra) => save(job.finalDir, extra));
  } finally {
    await trainer.close();
  }
  return EXIT_CODES.ok;
}

/** At the horizon: validation (at most m sequences at a time), then final/ with its loss. */
async function finish(
  trainer: Trainer,
  val: { path: string; maxLength: number; batches: number } | null,
  saveFinal: (extra: Record<string, unknown>) => void,
): Promise<void> {
  let valLoss: number | null = null;
  if (val !== null) {
    const tokens = new Uint8Array(readFileSync(val.path));
    const batches = sequentialBatches({
      tokens,
      seqLen: val.maxLength,
      batchSize: trainer.options.batchSize,
      maxBatches: val.batches,
    });
    if (batches.length === 0) report({ event: 'validation-empty', bytes: tokens.length });
    else {
      const v = await validate(trainer, microBatchesOf(batches, trainer.microBatchSize));
      if ('oom' in v) report({ event: 'validation-oom', batchSize: v.batchSize, error: v.oom });
      else {
        valLoss = v.loss;
        trainer.logEval(valLoss);
        report({ event: 'validation', loss: v.loss, windows: v.windows });
      }
    }
  }
  saveFinal({ val_loss: valLoss });
}

main().then(
  (code) => process.exit(code),
  // The error's own exit code (a full disk 12, a missing device 9), as the in-process path gave it; else a failed run.
  (err: Error) => fail(err.message, err instanceof DiskFullError ? EXIT_CODES.diskFull : trainCode(exitCodeFor(err))),
);

function trainCode(code: number): number {
  return code === EXIT_CODES.internal ? EXIT_CODES.train : code;
}
