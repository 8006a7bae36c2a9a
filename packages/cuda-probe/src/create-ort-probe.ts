import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { OrtSessionJobOptions } from './_protocol';
import { integerAtLeast, oneOf, optionalBoolean, optionalIntegerAtLeast, requireObject } from './_validate';
import { resolveWorkerOptions, workerLaunch, type WorkerProbeOptions } from './_worker-options';
import { createWorkerProbe } from './_worker-probe';
import { ProbeOptionsError } from './errors';
import { assertPeers } from './_peer';
import type { ChildProbeFn } from './types';

/** Session options forwarded to the child's `InferenceSession.create`. */
export interface OrtProbeSessionOptions {
  /**
   * Intra-op threads of the child's session (also sizes the address-space headroom).
   * @default onnxruntime's default (one per physical core)
   */
  intraOpNumThreads?: number;
  /** @default onnxruntime's default */
  interOpNumThreads?: number;
  /**
   * ORT's CPU memory arena. Keep it as the trainer will run.
   * @default true
   */
  enableCpuMemArena?: boolean;
  /** @default 'all' */
  graphOptimizationLevel?: 'disabled' | 'basic' | 'extended' | 'all';
  /** `extra` session config entries, e.g. `{optimization: {disable_specified_optimizers: '...'}}`. */
  extra?: Record<string, unknown>;
}

/** Options of {@link createOrtProbe}. */
export interface CreateOrtProbeOptions extends WorkerProbeOptions {
  /** Path of the ONNX model whose one `session.run` is the step. */
  model: string;
  /** Sequence length of the synthetic batch: an integer >= 8 (the second symbolic dimension). */
  maxLength: number;
  /**
   * Token id that fills `input_ids` and `labels` (taken modulo `vocabSize`).
   * @default 0
   */
  padId?: number;
  /** Vocabulary size, including added special tokens (`len(tokenizer)`, not the base vocab). */
  vocabSize: number;
  /** Forwarded to the child's session. */
  session?: OrtProbeSessionOptions;
}

function sessionOptions(value: unknown): OrtSessionJobOptions {
  if (value === undefined) return {};
  const s = requireObject('session', value);
  const out: OrtSessionJobOptions = {};
  if (s.intraOpNumThreads !== undefined)
    out.intraOpNumThreads = integerAtLeast('session.intraOpNumThreads', s.intraOpNumThreads, 1);
  if (s.interOpNumThreads !== undefined)
    out.interOpNumThreads = integerAtLeast('session.interOpNumThreads', s.interOpNumThreads, 1);
  const arena = optionalBoolean('session.enableCpuMemArena', s.enableCpuMemArena);
  if (arena !== undefined) out.enableCpuMemArena = arena;
  if (s.graphOptimizationLevel !== undefined) {
    out.graphOptimizationLevel = oneOf(
      'session.graphOptimizationLevel',
      s.graphOptimizationLevel,
      ['disabled', 'basic', 'extended', 'all'] as const,
      'all',
    );
  }
  if (s.extra !== undefined) out.extra = requireObject('session.extra', s.extra);
  return out;
}

/**
 * A probe that runs ONE `session.run` of an ONNX model per candidate batch size, each in a
 * fresh Node child: the child builds a synthetic batch from the session's input metadata
 * (first symbolic dimension = batch, second = `maxLength`), measures its baseline, runs the
 * step and reports its peak. CPU: the child starts under an address-space limit and the step
 * fits when its resident growth is within the budget (exact comparison). CUDA: it fits when
 * the child's device memory after the step is within free + held before it; when the driver
 * cannot answer (WDDM), only an out-of-memory failure refuses, and the outcome says so.
 * An out-of-memory failure (any spelling in the catalogue) or a SIGKILL resolves to
 * `fits: false`; any other failure throws `ProbeChildError`, a hung child `ProbeTimeoutError`.
 *
 * @throws {ProbeOptionsError} a bad option (its `field` names it)
 */
export function createOrtProbe(options: CreateOrtProbeOptions): ChildProbeFn {
  const o = requireObject('options', options) as unknown as CreateOrtProbeOptions;
  assertPeers('createOrtProbe', ['onnxruntime-node']);
  if (typeof o.model !== 'string' || o.model === '')
    throw new ProbeOptionsError('model must be the path of an .onnx file', { field: 'model' });
  const model = resolve(o.model);
  if (!existsSync(model)) throw new ProbeOptionsError(`model: ${model} does not exist`, { field: 'model' });
  const maxLength = integerAtLeast(
    'maxLength',
    o.maxLength,
    8,
    'the synthetic batch needs at least 8 tokens per sequence',
  );
  const vocabSize = integerAtLeast('vocabSize', o.vocabSize, 2, 'use len(tokenizer), added tokens included');
  const padId = optionalIntegerAtLeast('padId', o.padId, 0, 0);
  const session = sessionOptions(o.session);
  const r = resolveWorkerOptions(o);
  return createWorkerProbe({
    what: 'ORT probe child',
    ...workerLaunch(r),
    work: { kind: 'ort', modelPath: model, maxLength, padId, vocabSize, session, overrides: {} },
    threads: session.intraOpNumThreads,
  });
}
