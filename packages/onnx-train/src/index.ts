export type { GptSpec, GptSpecInput } from './gpt-spec';
export { defineGptSpec, assertGptSpec } from './gpt-spec';
export { validateGptSpec, type SpecValidation } from './validate-gpt-spec';
export { moduleNames } from './module-names';
export { parameterSpecs, shapeSize, type ParamSpec, type ParamInit } from './parameter-specs';
export { resolveAdamW, type AdamWOptions, type ResolvedAdamW } from './adamw-options';
export { tensorNames } from './tensor-names';
export {
  buildTrainingModel,
  normalizeRecompute,
  type BuildTrainingModelOptions,
  type TrainingModel,
  type TrainingModelMode,
} from './build-training-model';
export type { FloatDType } from './_graph';
export { ONNX_OPSET } from './_graph';
export { initParameters, type InitParametersOptions, type FloatArray } from './init-parameters';
export { makeSyntheticBatch, type MakeSyntheticBatchOptions, type TrainBatch } from './make-synthetic-batch';
export {
  TrainStep,
  createTrainingSession,
  trainingSessionOptions,
  DISABLE_CSE,
  type TrainStepOptions,
  type TrainStepState,
  type StepResult,
  type StepMeasurement,
  type ExecutionProviderName,
} from './train-step';
export type { DataParallel, MicroBatchResult, RunStepOptions } from './step-types';
export {
  OnnxTrainError,
  type OnnxTrainErrorCode,
  GptSpecError,
  ExecutionProviderError,
  TrainStepError,
  TrainInputError,
  SafetensorsError,
  CheckpointError,
  DataError,
  MemoryMeasurementError,
} from './errors';
export { ByteTokenizer } from './byte-tokenizer';
export { loadTextCorpus, type LoadTextCorpusOptions, type TextCorpus } from './load-text-corpus';
export { TokenSampler, sequentialBatches, type TokenSamplerOptions } from './token-sampler';
export { cosineLr, type CosineLrOptions } from './cosine-lr';
export { trainingFlopsPerToken } from './training-flops';
export { runFingerprint, canonicalJson } from './run-fingerprint';
export { writeTrainingModel, type WrittenTrainingModel } from './write-training-model';
export {
  encodeSafetensors,
  safetensorsArrayName,
  SAFETENSORS_ELEMENT_BYTES,
  type SafetensorsDType,
  type SafetensorsData,
  type SafetensorsTensor,
} from './encode-safetensors';
export { decodeSafetensors, type SafetensorsFile } from './decode-safetensors';
export { readSafetensors } from './read-safetensors';
export { writeSafetensors } from './write-safetensors';
export {
  Trainer,
  CHECKPOINT_FILES,
  EXPORT_FILES,
  type LogHistoryEntry,
  type TrainerOptions,
  type TrainerState,
  type TrainerStepLog,
  type TrainLoopOptions,
  type TrainSummary,
  type CheckpointInfo,
} from './trainer';
export { runOneStep, type RunOneStepOptions, type OneStepReport } from './run-one-step';
export {
  SegmentedTrainStep,
  type SegmentedTrainStepOptions,
  type SegmentedTrainingModel,
  type SegmentedStepStats,
  type OffloadOptions,
} from './segmented-train-step';
export { createTrainStep, type CreateTrainStepOptions, type ExecutionMode } from './create-train-step';
export {
  estimateActivationBytes,
  type EstimateActivationBytesOptions,
  type ActivationEstimate,
} from './estimate-activation-bytes';
export {
  resolveRecompute,
  type ResolveRecomputeOptions,
  type ResolvedRecompute,
  type GradientCheckpointingOption,
  type BudgetTierOption,
} from './resolve-recompute';
export { selectiveToCore, type SelectiveToCoreOptions } from './selective-to-core';
export {
  planBudgetTier,
  type PlanBudgetTierOptions,
  type BudgetTierReport,
  type BudgetMeasurement,
} from './plan-budget-tier';
export { gpt2Config, gpt2GenerationConfig, GPT2_LAYER_NORM_EPSILON, type Gpt2Config } from './gpt2-config';
export { runTrainChild, type TrainChildOptions } from './run-train-child';
export {
  readTrainJob,
  REPORT_PREFIX,
  type TrainJob,
  type TrainReport,
  type TrainSessionRecord,
} from './train-job';
export { microBatchesOf, validate } from './validate-micro-batches';
