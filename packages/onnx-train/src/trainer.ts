import { join } from 'node:path';
import { readCheckpoint } from './_checkpoint-read';
import { writeCheckpoint } from './_checkpoint-write';
import { splitMicroBatches } from './_accumulate';
import { checkMicroBatchSize, fingerprintConfig, stepOptionsOf } from './_trainer-config';
import type {
  TrainerOptions,
  LogHistoryEntry,
  TrainerState,
  TrainerStepLog,
  CheckpointInfo,
  TrainLoopOptions,
  TrainSummary,
} from './trainer-types';
import { cosineLr } from './cosine-lr';
import { CheckpointError, DataError, OnnxTrainError } from './errors';
import { assertGptSpec, type GptSpec } from './gpt-spec';
import { loadTextCorpus, type TextCorpus } from './load-text-corpus';
import { runFingerprint } from './run-fingerprint';
import { sequentialBatches, TokenSampler } from './token-sampler';
import type { DataParallel, StepResult } from './step-types';
import type { TrainStep } from './train-step';
import { createTrainStep, type CreateTrainStepOptions } from './create-train-step';
import type { SegmentedTrainStep } from './segmented-train-step';

export type {
  TrainerOptions,
  LogHistoryEntry,
  TrainerState,
  TrainerStepLog,
  CheckpointInfo,
  TrainLoopOptions,
  TrainSummary,
} from './trainer-types';

export { CHECKPOINT_FILES, EXPORT_FILES } from './_checkpoint-format';

/**
 * The training loop: byte-level data, a resumable sampler, cosine LR with warmup, evaluation,
 * and safetensors checkpoints a new process can resume from bit-exactly.
 *
 * ```ts
 * const trainer = await Trainer.create({ spec, files: ['book.txt'], batchSize: 8, totalSteps: 200 });
 * await trainer.train({ outputDir: 'out', checkpointEvery: 50, onCheckpoint: push });
 * ```
 */
export class Trainer {
  readonly spec: GptSpec;
  readonly options: Readonly<TrainerOptions>;
  /** Identity of the run: same spec, data, seed, batch and schedule ⇒ same fingerprint. */
  readonly fingerprint: string;
  private step_: TrainStep | SegmentedTrainStep;
  private readonly stepOptions: CreateTrainStepOptions;
  readonly corpus: Readonly<TextCorpus>;
  private sampler: TokenSampler;
  /** The run id written into checkpoints. */
  readonly runId: string;
  private tokens = 0;
  private lastLoss: number | null = null;
  private history: LogHistoryEntry[] = [];
  private pendingLosses: number[] = [];
  private micro: number;

  private constructor(
    options: TrainerOptions,
    corpus: TextCorpus,
    step: TrainStep | SegmentedTrainStep,
    stepOptions: CreateTrainStepOptions,
  ) {
    this.options = options;
    this.spec = options.spec;
    this.corpus = corpus;
    this.step_ = step;
    this.stepOptions = stepOptions;
    this.fingerprint = runFingerprint(fingerprintConfig(options, corpus));
    this.runId = options.run ?? this.fingerprint;
    this.micro = options.microBatchSize ?? options.batchSize;
    this.sampler = new TokenSampler({ tokens: corpus.train, seqLen: options.spec.seqLen, seed: options.seed ?? 0 });
  }

  /** Loads the data, builds the step and initialises the parameters from `seed`. */
  static async create(options: TrainerOptions): Promise<Trainer> {
    assertGptSpec(options.spec);
    if (options.spec.vocabSize < 256) {
      throw new DataError(`spec.vocabSize is ${options.spec.vocabSize}; the byte-level tokenizer needs at least 256`);
    }
    for (const [field, v] of [
      ['batchSize', options.batchSize],
      ['totalSteps', options.totalSteps],
      ['scheduleSteps', options.scheduleSteps ?? options.totalSteps],
    ] as const) {
      if (!Number.isInteger(v) || v < 1) throw new DataError(`${field} must be a positive integer (got ${v})`);
    }
    checkMicroBatchSize(options.batchSize, options.microBatchSize);
    if (options.files === undefined && options.text === undefined)
      throw new DataError('pass files (text files to train on) or text');
    const corpus = loadTextCorpus({
      ...(options.files !== undefined ? { files: options.files } : {}),
      ...(options.text !== undefined ? { text: options.text } : {}),
      evalFraction: options.evalFraction ?? 0.1,
      minTokens: options.spec.seqLen + 1,
    });
    const stepOptions = stepOptionsOf(options);
    const step = await createTrainStep(stepOptions);
    return new Trainer(options, corpus, step, stepOptions);
  }

  /** `create` + `loadCheckpoint(dir)`: continues a run where a checkpoint left it. */
  static async fromCheckpoint(options: TrainerOptions & { dir: string }): Promise<Trainer> {
    const { dir, ...rest } = options;
    const trainer = await Trainer.create(rest);
    try {
      trainer.loadCheckpoint(dir);
    } catch (err) {
      await trainer.close();
      throw err;
    }
    return trainer;
  }

  get state(): TrainerState {
    return { step: this.trainStep.step, cursor: this.sampler.cursor, tokensConsumed: this.tokens, run: this.runId };
  }

  /** `trainer_state.json`'s `log_history` so far (training entries, and eval entries from {@link logEval}). */
  get logHistory(): readonly LogHistoryEntry[] {
    return this.history;
  }

  /** Records an evaluation loss at the current step in `log_history` (`{step, eval_loss}`). */
  logEval(evalLoss: number): void {
    this.history.push({ step: this.trainStep.step, eval_loss: evalLoss });
  }

  /** m: sequences per forward/backward (a divisor of `batchSize`). */
  get microBatchSize(): number {
    return this.micro;
  }

  /** a = batchSize / microBatchSize: micro-batches accumulated per optimizer step. */
  get accumulation(): number {
    return this.options.batchSize / this.micro;
  }

  /**
   * Changes m for the next steps (e.g. a smaller divisor after an out-of-memory error). The
   * optimizer's batch stays `batchSize`: the run trains the same model.
   * @throws {DataError} m not a positive divisor of `batchSize`
   */
  setMicroBatchSize(microBatchSize: number): void {
    checkMicroBatchSize(this.options.batchSize, microBatchSize);
    this.micro = microBatchSize;
  }

  /** The training step (fused or segmented); replaced by {@link stepDown}. */
  get trainStep(): TrainStep | SegmentedTrainStep {
    return this.step_;
  }

  /**
   * After an out-of-memory error: sets a smaller micro-batch and rebuilds the step with the same
   * parameters, moments and step counter. The old step's ONNX Runtime sessions are released first:
   * their memory arenas keep what the failed run grew them to, and would fail the next run too.
   * @throws {DataError} m not a positive divisor of `batchSize`
   */
  async stepDown(microBatchSize: number): Promise<void> {
    checkMicroBatchSize(this.options.batchSize, microBatchSize);
    const state = this.step_.getState();
    await this.step_.release();
    const lr = this.step_.lr;
    // The recompute set already resolved (a budget tier is not planned again).
    const { gradientCheckpointing: _planned, ...rest } = this.stepOptions;
    this.step_ = await createTrainStep({
      ...rest,
      recompute: this.step_.model.recompute,
      parameters: state.parameters,
    });
    this.step_.setState(state);
    this.step_.lr = lr;
    this.micro = microBatchSize;
  }

  /** Learning rate of the step about to be taken. */
  get nextLr(): number {
    const lr = this.options.lr ?? 3e-4;
    return cosineLr({
      step: this.trainStep.step + 1,
      lr,
      warmupSteps: this.options.warmupSteps ?? 0,
      totalSteps: this.options.scheduleSteps ?? this.options.totalSteps,
      minLr: this.options.minLr ?? lr / 10,
    });
  }

  /**
   * One optimizer step on the next training batch. With `dataParallel`, every rank draws the same
   * batch and runs its share of its micro-batches (see {@link DataParallel}).
   */
  async step(opts: { dataParallel?: DataParallel } = {}): Promise<TrainerStepLog> {
    const lr = this.nextLr;
    // The sampler moves only once the step succeeded: a failed step (e.g. out of memory) can be redone.
    const cursor = this.sampler.cursor;
    const batch = this.sampler.nextBatch(this.options.batchSize);
    let r: StepResult;
    try {
      r = await this.trainStep.run(batch, {
        lr,
        microBatchSize: this.micro,
        ...(opts.dataParallel !== undefined ? { dataParallel: opts.dataParallel } : {}),
      });
    } catch (err) {
      this.sampler = new TokenSampler({
        tokens: this.corpus.train,
        seqLen: this.spec.seqLen,
        seed: this.options.seed ?? 0,
        cursor,
      });
      throw err;
    }
    this.tokens += r.tokens;
    this.lastLoss = r.loss;
    this.pendingLosses.push(r.loss);
    const every = this.options.logEverySteps ?? Math.max(1, Math.ceil(this.options.totalSteps / 500));
    if (r.step % every === 0 || r.step === this.options.totalSteps) {
      const loss = this.pendingLosses.reduce((a, b) => a + b, 0) / this.pendingLosses.length;
      this.history.push({ step: r.step, loss, learning_rate: lr, grad_norm: r.gradNorm });
      this.pendingLosses = [];
    }
    return {
      step: r.step,
      microBatchSize: r.microBatchSize,
      accumulation: r.accumulation,
      loss: r.loss,
      gradNorm: r.gradNorm,
      lr,
      tokensConsumed: this.tokens,
      runMs: r.runMs,
      totalMs: r.totalMs,
    };
  }

  /** Trains until `untilStep` (default: the horizon), saving checkpoints and calling the hooks. */
  async train(opts: TrainLoopOptions = {}): Promise<TrainSummary> {
    const until = opts.untilStep ?? this.options.totalSteps;
    if (!Number.isInteger(until) || until < 0 || until > this.options.totalSteps) {
      throw new DataError(
        `untilStep must be an integer in [0, totalSteps = ${this.options.totalSteps}] (got ${until})`,
      );
    }
    const every = opts.checkpointEvery;
    if (every !== undefined && (!Number.isInteger(every) || every < 1))
      throw new DataError(`checkpointEvery must be a positive integer (got ${every})`);
    if (every !== undefined && opts.outputDir === undefined)
      throw new DataError('checkpointEvery needs outputDir (where checkpoint-<step> folders go)');
    const atEnd = opts.checkpointAtEnd ?? opts.outputDir !== undefined;
    const checkpoints: CheckpointInfo[] = [];
    const save = async (): Promise<void> => {
      const info = this.saveCheckpoint(join(opts.outputDir!, `checkpoint-${this.trainStep.step}`));
      checkpoints.push(info);
      await opts.onCheckpoint?.(info);
    };
    let aborted = false;
    while (this.trainStep.step < until) {
      if (opts.signal?.aborted) {
        aborted = true;
        break;
      }
      const log = await this.step();
      await opts.onStep?.(log);
      if (every !== undefined && log.step % every === 0) await save();
    }
    if (opts.signal?.aborted) aborted = true;
    if (atEnd && opts.outputDir !== undefined && checkpoints.at(-1)?.step !== this.trainStep.step) await save();
    const step = this.trainStep.step;
    return {
      step,
      stopReason: aborted && step < until ? 'aborted' : step >= this.options.totalSteps ? 'horizon' : 'untilStep',
      lastLoss: this.lastLoss,
      tokensConsumed: this.tokens,
      checkpoints,
    };
  }

  /** Mean loss over the held-out tail (up to `evalBatches` batches); null when there is no eval split. */
  async evaluate(): Promise<number | null> {
    const batches = sequentialBatches({
      tokens: this.corpus.eval,
      seqLen: this.spec.seqLen,
      batchSize: this.options.batchSize,
      maxBatches: this.options.evalBatches ?? 8,
    });
    if (batches.length === 0) return null;
    let weighted = 0;
    let windows = 0;
    for (const b of batches) {
      // In micro-batches of m: the evaluation pass needs no more memory than a training step.
      for (const { batch } of splitMicroBatches(b, b.batchSize % this.micro === 0 ? this.micro : undefined)) {
        weighted += (await this.trainStep.evaluate(batch)) * batch.batchSize;
        windows += batch.batchSize;
      }
    }
    return weighted / windows;
  }

  /**
   * Writes `model.safetensors`, `optimizer.safetensors` and `trainer_state.json` into `dir`
   * (built in a sibling temp folder, then renamed into place; an existing `dir` is replaced).
   */
  saveCheckpoint(dir: string): CheckpointInfo {
    const o = this.options;
    return writeCheckpoint(dir, {
      state: this.trainStep.getState(),
      params: this.trainStep.model.params,
      dtype: this.trainStep.dtype,
      spec: this.spec,
      run: this.runId,
      cursor: this.sampler.cursor,
      tokensConsumed: this.tokens,
      lastLoss: this.lastLoss,
      config: fingerprintConfig(o, this.corpus),
      totalSteps: o.totalSteps,
      loggingSteps: o.logEverySteps ?? Math.max(1, Math.ceil(o.totalSteps / 500)),
      batchSize: o.batchSize,
      logHistory: this.history,
    });
  }

  /**
   * Restores parameters, moments, step, sampler cursor and token count from a checkpoint
   * folder. Refuses (CheckpointError `SOUP_ONNX_TRAIN_CHECKPOINT_MISMATCH`) a checkpoint of
   * another run, naming both fingerprints.
   */
  loadCheckpoint(dir: string): TrainerState {
    const c = readCheckpoint(dir, {
      runId: this.runId,
      fingerprint: this.fingerprint,
      params: this.trainStep.model.params,
      dtype: this.trainStep.dtype,
    });
    try {
      this.trainStep.setState({ step: c.step, parameters: c.parameters, m: c.m, v: c.v });
    } catch (err) {
      if (err instanceof OnnxTrainError)
        throw new CheckpointError(err.message, { code: 'SOUP_ONNX_TRAIN_CHECKPOINT_INVALID', cause: err });
      throw err;
    }
    this.sampler = new TokenSampler({
      tokens: this.corpus.train,
      seqLen: this.spec.seqLen,
      seed: this.options.seed ?? 0,
      cursor: c.cursor,
    });
    this.tokens = c.tokensConsumed;
    this.lastLoss = c.lastLoss;
    this.history = c.logHistory;
    this.pendingLosses = [];
    return this.state;
  }

  async close(): Promise<void> {
    await this.trainStep.release();
  }
}
