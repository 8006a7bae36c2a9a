// The trainer's checkpoint folder, written: model and optimizer safetensors, trainer_state.json (soup's
// resume fields plus the Hugging Face Trainer's), and config files so it loads as a transformers GPT-2.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { CHECKPOINT_FILES, EXPORT_FILES, safetensorsDtype, STATE_FORMAT } from './_checkpoint-format';
import { writeFileAtomic } from './_fs';
import type { FloatDType } from './_graph';
import type { SafetensorsTensor } from './encode-safetensors';
import { CheckpointError } from './errors';
import type { GptSpec } from './gpt-spec';
import { gpt2Config, gpt2GenerationConfig } from './gpt2-config';
import type { ParamSpec } from './parameter-specs';
import type { TrainStepState } from './step-types';
import { tensorNames } from './tensor-names';
import type { CheckpointInfo, LogHistoryEntry } from './trainer-types';
import { writeSafetensors } from './write-safetensors';

/** Everything a checkpoint holds. */
export interface CheckpointContents {
  state: TrainStepState;
  params: readonly ParamSpec[];
  dtype: FloatDType;
  spec: GptSpec;
  run: string;
  cursor: number;
  tokensConsumed: number;
  lastLoss: number | null;
  /** The run's fingerprint config. */
  config: Record<string, unknown>;
  totalSteps: number;
  loggingSteps: number;
  batchSize: number;
  logHistory: LogHistoryEntry[];
}

/**
 * Writes `model.safetensors`, `optimizer.safetensors` and `trainer_state.json` into `dir`
 * (built in a sibling temp folder, then renamed into place; an existing `dir` is replaced).
 */
export function writeCheckpoint(dir: string, c: CheckpointContents): CheckpointInfo {
  const { state, params } = c;
  const dtype = safetensorsDtype(c.dtype);
  mkdirSync(dirname(dir), { recursive: true });
  const tmp = join(dirname(dir), `.${basename(dir)}.partial-${randomBytes(4).toString('hex')}`);
  mkdirSync(tmp);
  try {
    const meta = { format: 'pt', soup_run: c.run, soup_step: String(state.step) };
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
    const json = {
      format: STATE_FORMAT,
      step: state.step,
      cursor: c.cursor,
      tokens_consumed: c.tokensConsumed,
      run: c.run,
      last_loss: c.lastLoss,
      spec: c.spec,
      dtype: c.dtype,
      config: c.config,
      // The Hugging Face Trainer's fields, so tools that read its state read soup's.
      global_step: state.step,
      max_steps: c.totalSteps,
      logging_steps: c.loggingSteps,
      train_batch_size: c.batchSize,
      is_local_process_zero: true,
      is_world_process_zero: true,
      log_history: c.logHistory,
    };
    writeFileAtomic(join(tmp, 'trainer_state.json'), `${JSON.stringify(json, null, 2)}\n`);
    writeFileAtomic(join(tmp, 'config.json'), `${JSON.stringify(gpt2Config(c.spec, c.dtype), null, 2)}\n`);
    writeFileAtomic(join(tmp, 'generation_config.json'), `${JSON.stringify(gpt2GenerationConfig(c.spec), null, 2)}\n`);
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
