// The trainer's checkpoint folder, read and checked before anything is restored: the files are there,
// trainer_state.json is soup's format and this run's (by run id and fingerprint), its counters are
// whole, and every tensor has the dtype and shape the model expects.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CHECKPOINT_FILES, safetensorsDtype, STATE_FORMAT } from './_checkpoint-format';
import type { FloatDType } from './_graph';
import { CheckpointError, SafetensorsError } from './errors';
import type { FloatArray } from './init-parameters';
import type { ParamSpec } from './parameter-specs';
import type { SafetensorsFile } from './decode-safetensors';
import { readSafetensors } from './read-safetensors';
import { runFingerprint } from './run-fingerprint';
import { tensorNames } from './tensor-names';
import type { LogHistoryEntry } from './trainer-types';

/** Whose checkpoint the trainer accepts, and the tensors it expects. */
export interface CheckpointExpectation {
  runId: string;
  fingerprint: string;
  params: readonly ParamSpec[];
  dtype: FloatDType;
}

/** What a checked checkpoint restores. */
export interface CheckpointRead {
  step: number;
  cursor: number;
  tokensConsumed: number;
  lastLoss: number | null;
  /** Entries up to `step`. */
  logHistory: LogHistoryEntry[];
  parameters: Map<string, FloatArray>;
  m: Map<string, FloatArray>;
  v: Map<string, FloatArray>;
}

/**
 * Reads a checkpoint folder. Refuses (CheckpointError `SOUP_ONNX_TRAIN_CHECKPOINT_MISMATCH`) a
 * checkpoint of another run, naming both fingerprints; anything malformed is `..._INVALID`.
 */
export function readCheckpoint(dir: string, e: CheckpointExpectation): CheckpointRead {
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
  if (json.run !== e.runId || (recorded !== null && recorded !== e.fingerprint)) {
    throw new CheckpointError(
      `checkpoint ${dir} belongs to run ${String(json.run)}, but this trainer is run ${e.runId} ` +
        '(spec, data, seed, batch size or schedule differ)',
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
  const want = safetensorsDtype(e.dtype);
  const read = (file: string, key: (p: string) => string): Map<string, FloatArray> => {
    let tensors: SafetensorsFile['tensors'];
    try {
      tensors = readSafetensors(join(dir, file)).tensors;
    } catch (err) {
      if (err instanceof SafetensorsError)
        throw new CheckpointError(err.message, { code: 'SOUP_ONNX_TRAIN_CHECKPOINT_INVALID', cause: err });
      throw err;
    }
    const out = new Map<string, FloatArray>();
    for (const p of e.params) {
      const t = tensors.get(key(p.name));
      if (!t || t.dtype !== want || t.shape.join(',') !== p.shape.join(',')) {
        throw new CheckpointError(
          `${dir}/${file}: ${key(p.name)} is ${t ? `${t.dtype} [${t.shape.join(', ')}]` : 'missing'}, ` +
            `expected ${want} [${p.shape.join(', ')}]`,
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
  const step = json.step as number;
  return {
    step,
    cursor: json.cursor as number,
    tokensConsumed: json.tokens_consumed as number,
    lastLoss: typeof json.last_loss === 'number' ? json.last_loss : null,
    logHistory: Array.isArray(json.log_history)
      ? (json.log_history as LogHistoryEntry[]).filter((x) => x && Number.isInteger(x.step) && x.step <= step)
      : [],
    parameters,
    m,
    v,
  };
}
