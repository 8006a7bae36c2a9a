// soup's own trainer, as a child process a supervisor runs under the trainer contract every trainer
// keeps: `checkpoint-<step>/` folders whose trainer_state.json holds global_step and max_steps, a resume from
// `--resume-from`, a save of the step it is on at SIGTERM, exit 0 at its stop step (at the horizon after
// validation and final/). Every session rule (resume, pushes, session end, lease, step-down, peak) is the
// supervisor's; this process only trains, so a kernel OOM kill of it takes nothing else down.
//   <entry> <job.json> --output-dir <dir> --micro-batch-size <m> [--resume-from <dir>]
// What the child judges with another package's rules (out of memory, a full disk, the micro-batch text) and
// how its failures map to exit codes are the caller's: the entry script passes them in.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sequentialBatches } from './token-sampler';
import { Trainer } from './trainer';
import type { TrainerStepLog } from './trainer-types';
import { readTrainJob, REPORT_PREFIX, type TrainReport } from './train-job';
import { microBatchesOf, validate } from './validate-micro-batches';

/** Options of {@link runTrainChild}: the judges and exit codes the trainer child takes from its caller. */
export interface TrainChildOptions {
  /** The child's arguments after its script: `<job.json> --output-dir <dir> --micro-batch-size <m> ...`. */
  argv: readonly string[];
  /** An error's out-of-memory line, else null: a step's answers with {@link failedExitCode}, validation's is kept. */
  oomLine: (err: unknown) => string | null;
  /** A full disk while saving `path`, as the error to fail with (it says what is needed); else null. */
  diskFull: (err: unknown, p: { path: string; bytesNeeded: number; what: string }) => Error | null;
  /** The micro-batch as soup_run.json's `micro_batch` writes it (`m × a = G`). */
  microBatchText: (p: { microBatchSize: number; accumulation: number }) => string;
  /** The exit code of a failed step: out of memory, a loss that is not finite. */
  failedExitCode: number;
  /** The exit code of any other error the run ends with. */
  exitCodeOf: (err: Error) => number;
}

/** Runs the trainer child in this process and exits it (see the file comment). */
export function runTrainChild(o: TrainChildOptions): void {
  const t0 = performance.now();
  // The session's end arrives as SIGTERM (the supervisor's stop signal): the step running completes, is saved, and
  // no step starts after it. Installed first, so a signal during start-up is a stop too.
  const stop = { stopping: false };
  for (const sig of ['SIGTERM', 'SIGINT'] as const) process.on(sig, () => (stop.stopping = true));
  main(o, t0, stop).then(
    (code) => process.exit(code),
    (err: Error) => fail(err.message, o.exitCodeOf(err)),
  );
}

const report = (r: TrainReport): void => void process.stdout.write(`${REPORT_PREFIX}${JSON.stringify(r)}\n`);

function arg(argv: readonly string[], name: string): string | null {
  const i = argv.indexOf(name);
  return i >= 0 ? (argv[i + 1] ?? null) : null;
}

/** Fails the child with `code`, the message on stderr (the supervisor names its last line). */
function fail(message: string, code: number): never {
  process.stderr.write(`${message}\n`);
  process.exit(code);
}

async function main(o: TrainChildOptions, t0: number, stop: { stopping: boolean }): Promise<number> {
  const jobPath = o.argv[0]!;
  const job = readTrainJob(jobPath);
  const outputDir = arg(o.argv, '--output-dir')!;
  const m = Number(arg(o.argv, '--micro-batch-size'));
  const resumeFrom = arg(o.argv, '--resume-from');
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
        micro_batch: o.microBatchText({ microBatchSize: m, accumulation: G / m }),
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
      // Weights, then AdamW's two moments, each the size of the weights.
      throw o.diskFull(err, { path: dir, bytesNeeded: 3 * paramBytes, what: `saving ${dir}` }) ?? err;
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
      if (stop.stopping) break;
      // Said before the step: a peak or an out-of-memory failure while it runs is placed at it.
      report({ event: 'begin', step: trainer.state.step + 1 });
      const stepT0 = performance.now();
      let log: TrainerStepLog;
      try {
        log = await trainer.step();
      } catch (err) {
        // Out of memory: the supervisor judges the line, steps m down and resumes from the newest checkpoint.
        const line = o.oomLine(err);
        if (line !== null) {
          process.stderr.write(`${line}\n`);
          process.exit(o.failedExitCode);
        }
        throw err;
      }
      const ms = performance.now() - stepT0;
      if (!Number.isFinite(log.loss))
        fail(
          `the loss is ${log.loss} at step ${log.step}: lower training.lr or raise training.warmup_steps`,
          o.failedExitCode,
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
    if (stop.stopping && step > saved) save(checkpoint(step));
    if (!stop.stopping && step >= job.trainer.totalSteps)
      await finish(trainer, job.val, o.oomLine, (extra) => save(job.finalDir, extra));
  } finally {
    await trainer.close();
  }
  return 0;
}

/** At the horizon: validation (at most m sequences at a time), then final/ with its loss. */
async function finish(
  trainer: Trainer,
  val: { path: string; maxLength: number; batches: number } | null,
  oomLine: (err: unknown) => string | null,
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
      const v = await validate(trainer, microBatchesOf(batches, trainer.microBatchSize), oomLine);
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
