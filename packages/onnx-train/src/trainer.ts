import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { writeFileAtomic } from './_fs';
import { splitMicroBatches } from './_accumulate';
import type {
  TrainerOptions,
  LogHistoryEntry,
  TrainerState,
  TrainerStepLog,
  CheckpointInfo,
  TrainLoopOptions,
  TrainSummary,
} from './trainer-types';
import type { FloatDType } from './_graph';
import { resolveAdamW } from './adamw-options';
import { cosineLr } from './cosine-lr';
import type { SafetensorsTensor } from './encode-safetensors';
import { CheckpointError, DataError, OnnxTrainError, SafetensorsError } from './errors';
import { assertGptSpec, type GptSpec } from './gpt-spec';
import type { FloatArray } from './init-parameters';
import { loadTextCorpus, type TextCorpus } from './load-text-corpus';
import { readSafetensors } from './read-safetensors';
import { withPlanBatch } from './_step-tier';
import { runFingerprint } from './run-fingerprint';
import { tensorNames } from './tensor-names';
import { sequentialBatches, TokenSampler } from './token-sampler';
import type { TrainStep } from './train-step';
import { createTrainStep, type CreateTrainStepOptions } from './create-train-step';
import type { SegmentedTrainStep } from './segmented-train-step';
import { writeSafetensors } from './write-safetensors';
import { gpt2Config, gpt2GenerationConfig } from './gpt2-config';

export type {
  TrainerOptions,
  LogHistoryEntry,
  TrainerState,
  TrainerStepLog,
  CheckpointInfo,
  TrainLoopOptions,
  TrainSummary,
} from './trainer-types';

const STATE_FORMAT = 'soup-onnx-train-checkpoint/1';
/** The files a checkpoint needs to resume. */
export const CHECKPOINT_FILES = ['model.safetensors', 'optimizer.safetensors', 'trainer_state.json'] as const;
/** Written beside them so the folder loads outside soup (transformers' GPT-2). */
export const EXPORT_FILES = ['config.json', 'generation_config.json'] as const;

function st(dtype: FloatDType): 'F32' | 'F64' {
  return dtype === 'float64' ? 'F64' : 'F32';
}

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
    const stepOptions: CreateTrainStepOptions = {
      spec: options.spec,
      seed: options.seed ?? 0,
      ...(options.dtype !== undefined ? { dtype: options.dtype } : {}),
      ...(options.recompute !== undefined ? { recompute: options.recompute } : {}),
      ...(options.gradientCheckpointing !== undefined
        ? {
            gradientCheckpointing: withPlanBatch(
              options.gradientCheckpointing,
              options.microBatchSize ?? options.batchSize,
            ),
          }
        : {}),
      ...(options.adamw !== undefined ? { adamw: options.adamw } : {}),
      ...(options.executionProvider !== undefined ? { executionProvider: options.executionProvider } : {}),
      ...(options.deviceId !== undefined ? { deviceId: options.deviceId } : {}),
      ...(options.gpuMemLimitBytes !== undefined ? { gpuMemLimitBytes: options.gpuMemLimitBytes } : {}),
      ...(options.intraOpNumThreads !== undefined ? { intraOpNumThreads: options.intraOpNumThreads } : {}),
      ...(options.measure !== undefined ? { measure: options.measure } : {}),
      ...(options.execution !== undefined ? { execution: options.execution } : {}),
      ...(options.offload !== undefined ? { offload: options.offload } : {}),
    };
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
      totalSteps: this.options.totalSteps,
      minLr: this.options.minLr ?? lr / 10,
    });
  }

  /** One optimizer step on the next training batch. */
  async step(): Promise<TrainerStepLog> {
    const lr = this.nextLr;
    // The sampler moves only once the step succeeded: a failed step (e.g. out of memory) can be redone.
    const cursor = this.sampler.cursor;
    const batch = this.sampler.nextBatch(this.options.batchSize);
    let r: Awaited<ReturnType<(TrainStep | SegmentedTrainStep)['run']>>;
    try {
      r = await this.trainStep.run(batch, { lr, microBatchSize: this.micro });
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
    const state = this.trainStep.getState();
    const dtype = st(this.trainStep.dtype);
    const params = this.trainStep.model.params;
    mkdirSync(dirname(dir), { recursive: true });
    const tmp = join(dirname(dir), `.${basename(dir)}.partial-${randomBytes(4).toString('hex')}`);
    mkdirSync(tmp);
    try {
      const meta = { format: 'pt', soup_run: this.runId, soup_step: String(state.step) };
      writeSafetensors({
        path: join(tmp, 'model.safetensors'),
        tensors: params.map((p): [string, SafetensorsTensor] => [
          p.name,
          { dtype, shape: p.shape, data: state.parameters.get(p.name)! },
        ]),
        metadata: meta,
      });
      writeSafetensors({
        path: join(tmp, 'optimizer.safetensors'),
        tensors: params.flatMap((p): [string, SafetensorsTensor][] => [
          [tensorNames.adamM(p.name), { dtype, shape: p.shape, data: state.m.get(p.name)! }],
          [tensorNames.adamV(p.name), { dtype, shape: p.shape, data: state.v.get(p.name)! }],
        ]),
        metadata: meta,
      });
      const o = this.options;
      const every = o.logEverySteps ?? Math.max(1, Math.ceil(o.totalSteps / 500));
      const json = {
        format: STATE_FORMAT,
        step: state.step,
        cursor: this.sampler.cursor,
        tokens_consumed: this.tokens,
        run: this.runId,
        last_loss: this.lastLoss,
        spec: this.spec,
        dtype: this.trainStep.dtype,
        config: fingerprintConfig(o, this.corpus),
        // The Hugging Face Trainer's fields, so tools that read its state read soup's.
        global_step: state.step,
        max_steps: o.totalSteps,
        logging_steps: every,
        train_batch_size: o.batchSize,
        is_local_process_zero: true,
        is_world_process_zero: true,
        log_history: this.history,
      };
      writeFileAtomic(join(tmp, 'trainer_state.json'), `${JSON.stringify(json, null, 2)}\n`);
      writeFileAtomic(
        join(tmp, 'config.json'),
        `${JSON.stringify(gpt2Config(this.spec, this.trainStep.dtype), null, 2)}\n`,
      );
      writeFileAtomic(
        join(tmp, 'generation_config.json'),
        `${JSON.stringify(gpt2GenerationConfig(this.spec), null, 2)}\n`,
      );
      if (existsSync(dir)) rmSync(dir, { recursive: true, force: true });
      renameSync(tmp, dir);
    } catch (err) {
      rmSync(tmp, { recursive: true, force: true });
      throw new CheckpointError(`could not write checkpoint ${dir}: ${(err as Error).message}`, {
        code: 'SOUP_ONNX_TRAIN_CHECKPOINT_INVALID',
        cause: err,
      });
    }
    return { dir, step: state.step, files: [...CHECKPOINT_FILES, ...EXPORT_FILES] };
  }

  /**
   * Restores parameters, moments, step, sampler cursor and token count from a checkpoint
   * folder. Refuses (CheckpointError `SOUP_ONNX_TRAIN_CHECKPOINT_MISMATCH`) a checkpoint of
   * another run, naming both fingerprints.
   */
  loadCheckpoint(dir: string): TrainerState {
    for (const f of CHECKPOINT_FILES) {
      if (!existsSync(join(dir, f))) {
        throw new CheckpointError(`checkpoint ${dir} has no ${f} (expected ${CHECKPOINT_FILES.join(', ')})`, {
          code: 'SOUP_ONNX_TRAIN_CHECKPOINT_INVALID',
        });
      }
    }
    let json: Record<string, unknown>;
    try {
      json = JSON.parse(readFileSync(join(dir, 'trainer_state.json'), 'utf8')) as Record<string, unknown>;
    } catch (err) {
      throw new CheckpointError(`${dir}/trainer_state.json is not valid JSON`, {
        code: 'SOUP_ONNX_TRAIN_CHECKPOINT_INVALID',
        cause: err,
      });
    }
    if (json.format !== STATE_FORMAT) {
      throw new CheckpointError(
        `${dir}/trainer_state.json: format ${JSON.stringify(json.format)}, expected ${STATE_FORMAT}`,
        { code: 'SOUP_ONNX_TRAIN_CHECKPOINT_INVALID' },
      );
    }
    const recorded =
      json.config !== null && typeof json.config === 'object'
        ? runFingerprint(json.config as Record<string, unknown>)
        : null;
    if (json.run !== this.runId || (recorded !== null && recorded !== this.fingerprint)) {
      throw new CheckpointError(
        `checkpoint ${dir} belongs to run ${String(json.run)}, but this trainer is run ${this.runId} (spec, data, seed, batch size or schedule differ)`,
        { code: 'SOUP_ONNX_TRAIN_CHECKPOINT_MISMATCH' },
      );
    }
    const ints = ['step', 'cursor', 'tokens_consumed'] as const;
    for (const k of ints) {
      if (!Number.isSafeInteger(json[k]) || (json[k] as number) < 0) {
        throw new CheckpointError(`${dir}/trainer_state.json: ${k} must be a non-negative integer`, {
          code: 'SOUP_ONNX_TRAIN_CHECKPOINT_INVALID',
        });
      }
    }
    const want = st(this.trainStep.dtype);
    const read = (file: string, key: (p: string) => string): Map<string, FloatArray> => {
      let tensors: ReturnType<typeof readSafetensors>['tensors'];
      try {
        tensors = readSafetensors(join(dir, file)).tensors;
      } catch (err) {
        if (err instanceof SafetensorsError)
          throw new CheckpointError(err.message, { code: 'SOUP_ONNX_TRAIN_CHECKPOINT_INVALID', cause: err });
        throw err;
      }
      const out = new Map<string, FloatArray>();
      for (const p of this.trainStep.model.params) {
        const t = tensors.get(key(p.name));
        if (!t || t.dtype !== want || t.shape.join(',') !== p.shape.join(',')) {
          throw new CheckpointError(
            `${dir}/${file}: ${key(p.name)} is ${t ? `${t.dtype} [${t.shape.join(', ')}]` : 'missing'}, expected ${want} [${p.shape.join(', ')}]`,
            { code: 'SOUP_ONNX_TRAIN_CHECKPOINT_INVALID' },
          );
        }
        out.set(p.name, t.data as FloatArray);
      }
      return out;
    };
    const parameters = read('model.safetensors', (p) => p);
    const m = read('optimizer.safetensors', tensorNames.adamM);
    const v = read('optimizer.safetensors', tensorNames.adamV);
    try {
      this.trainStep.setState({ step: json.step as number, parameters, m, v });
    } catch (err) {
      if (err instanceof OnnxTrainError)
        throw new CheckpointError(err.message, { code: 'SOUP_ONNX_TRAIN_CHECKPOINT_INVALID', cause: err });
      throw err;
    }
    this.sampler = new TokenSampler({
      tokens: this.corpus.train,
      seqLen: this.spec.seqLen,
      seed: this.options.seed ?? 0,
      cursor: json.cursor as number,
    });
    this.tokens = json.tokens_consumed as number;
    this.lastLoss = typeof json.last_loss === 'number' ? json.last_loss : null;
    const step = json.step as number;
    this.history = Array.isArray(json.log_history)
      ? (json.log_history as LogHistoryEntry[]).filter((e) => e && Number.isInteger(e.step) && e.step <= step)
      : [];
    this.pendingLosses = [];
    return this.state;
  }

  async close(): Promise<void> {
    await this.trainStep.release();
  }
}

function checkMicroBatchSize(batchSize: number, m: number | undefined): void {
  if (m === undefined) return;
  if (!Number.isInteger(m) || m < 1 || batchSize % m !== 0) {
    throw new DataError(
      `microBatchSize must be a positive divisor of batchSize ${batchSize} (got ${m}): m × a = ${batchSize} with a whole accumulation a`,
    );
  }
}

function fingerprintConfig(o: TrainerOptions, corpus: TextCorpus): Record<string, unknown> {
  const lr = o.lr ?? 3e-4;
  return {
    spec: o.spec,
    dtype: o.dtype ?? 'float32',
    seed: o.seed ?? 0,
    batch_size: o.batchSize,
    total_steps: o.totalSteps,
    lr,
    warmup_steps: o.warmupSteps ?? 0,
    min_lr: o.minLr ?? lr / 10,
    adamw: resolveAdamW(o.adamw),
    eval_fraction: o.evalFraction ?? 0.1,
    data_sha256: corpus.sha256,
  };
}
