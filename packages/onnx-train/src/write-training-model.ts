import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { writeFileAtomic } from './_fs';
import { buildTrainingModel, type BuildTrainingModelOptions, type TrainingModel } from './build-training-model';
import type { GptSpec } from './gpt-spec';

/** What `writeTrainingModel` wrote. */
export interface WrittenTrainingModel extends Omit<TrainingModel, 'bytes'> {
  path: string;
  sizeBytes: number;
}

/**
 * Builds the training graph and writes it as an `.onnx` file (atomically), so any ONNX tool
 * — or a probe in a child process — can load and run it. Parameters and moments are graph
 * inputs, not initializers, so the file is small.
 *
 * Call as `writeTrainingModel(spec, path, options?)` or `writeTrainingModel({ spec, path, ...options })`.
 */
export function writeTrainingModel(
  spec: GptSpec,
  path: string,
  options?: Omit<BuildTrainingModelOptions, 'spec'>,
): WrittenTrainingModel;
export function writeTrainingModel(options: BuildTrainingModelOptions & { path: string }): WrittenTrainingModel;
export function writeTrainingModel(
  a: GptSpec | (BuildTrainingModelOptions & { path: string }),
  path?: string,
  options: Omit<BuildTrainingModelOptions, 'spec'> = {},
): WrittenTrainingModel {
  const opts: BuildTrainingModelOptions & { path: string } = 'spec' in a ? a : { ...options, spec: a, path: path! };
  if (typeof opts.path !== 'string' || opts.path.length === 0)
    throw new TypeError('writeTrainingModel: path must be a non-empty string');
  const { bytes, ...model } = buildTrainingModel(opts);
  mkdirSync(dirname(opts.path), { recursive: true });
  writeFileAtomic(opts.path, bytes);
  return { ...model, path: opts.path, sizeBytes: bytes.length };
}
