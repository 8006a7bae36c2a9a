export {
  prepareRun,
  type PrepareRunOptions,
  type PreparedRun,
  type PrepareEvent,
  type BatchSource,
  type TunePeak,
} from './prepare-run';
export {
  resolveBatch,
  type ResolveBatchOptions,
  type BatchResolution,
  type BatchEvent,
  type TrialView,
  type PlanIo,
} from './resolve-batch';
/** A batch search's answer as one sentence (the size, from the cache or from trials), shared by every command. */
export { describeResolution, type DescribeResolutionOptions } from './describe-resolution';
/** The warning when only a micro-batch of 1 fits a global batch with larger divisors. */
export { microBatchOneWarning } from './micro-batch-one-warning';
/** soup probe's sources (soup.yaml, an ONNX model, a trainer command): the refusals, the defaults, the search. */
export { probeSource, type ProbeSourceOptions, type ProbeSearch, type ProbeTuning } from './probe-source';
export {
  gptSpecOf,
  resolveTier,
  recomputeOf,
  offloadDirOf,
  autoOffloadTarget,
  offloadIssues,
  offloadOf,
  offloadChoicesOf,
  assertTrainable,
  cacheBaseOf,
  type TierPlan,
  type OffloadPlan,
} from './config-plan';
export { planBudgetTier, type PlanBudgetTierOptions, type BudgetTierPlan } from './budget-tier';
export { noFitAdvice, type NoFitAdviceOptions } from './no-fit-advice';
export { tuneTrain, describeChoice, type TrainTuneResult, type TrainTuneEvent } from './tune-train';
export { measureTrainGrid, headToHead, gridBest, type GridPoint } from './tune-grid';
export { commandTuneFns } from './command-tune-fns';
export {
  trainerFileHashes,
  execBase,
  changedFiles,
  trainerCacheBase,
  redactCommand,
  type TrainerCacheBase,
} from './trainer-files';
export { trainerSources, MAX_SOURCE_FILES, MAX_SOURCE_BYTES, type TrainerSources } from './trainer-sources';
export {
  DEFAULT_MAX_LENGTH,
  trialCommand,
  trainerProbe,
  trainerTrialProbe,
  trainerKeyOf,
  type TrainerProbe,
  type TrainerProbeOptions,
} from './trainer-probe';
export {
  resolveTrainerBatch,
  lowerProbedBatch,
  type ResolveTrainerBatchOptions,
  type ProbedBatch,
  type TrainerMicro,
} from './trainer-batch';
export {
  trainerTuneOptions,
  trainerTuneKey,
  tuneTrainerBatch,
  type TrainerTune,
  type TrainerTuneOptions,
  type TuneTrainerBatchOptions,
} from './trainer-tune';
export {
  microSuperviseOptions,
  type MicroSuperviseOptions,
  type MicroCacheLowered,
} from './micro-supervise-options';
export { trainerChange, type TrainerChange } from './trainer-change';
/** The step growth of a command probed over several steps, and its line (`memory over the trial's 3 steps: …`). */
export { PROBE_STEPS, withProbeSteps, stepGrowth, describeStepGrowth, type StepGrowth } from './probe-steps';
/** A resolved batch size as the flat snake_case record `soup probe --json` prints, so any tool reports it alike. */
export { probeRecord, type ProbeRecordOptions } from './probe-record';
export { configStepProbe, onnxModelProbe } from './step-probes';
export {
  runGlobalBatch,
  probeGlobalBatch,
  type GlobalBatch,
  type GlobalBatchCheck,
  type GlobalBatchFlags,
} from './global-batch';
export { planRun, type PlanRun, type PlanRunOptions, type PlanReport } from './plan-run';
/** soup plan's answer as (label, text) rows for a table: its words, the caller's layout and colours. */
export { planRows, type PlanRowsOptions, type PlanRowStyle } from './plan-rows';
/** How many steps apart a run's checkpoints are pushed: the flag, else hub.push_every_steps, else steps / 4. */
export { pushEveryOf } from './push-every-of';
export { trainerOptionsOf, readResumedState } from './trainer-options';
export { SoupPlanError, BudgetUnmeasuredError, PlanUsageError, type SoupPlanErrorCode } from './errors';
export { emptyTrainFacts, applyTrainReport, resumeTrainFacts, type TrainFacts } from './train-facts';
export { trainJobOf, type TrainJobOfOptions } from './train-job-of';
export { trainResultOf, completedTrainResult } from './train-result';
export {
  trainSuperviseOptions,
  trainPathsOf,
  type TrainPaths,
  type TrainSuperviseOptionsOptions,
  type TrainSuperviseSettings,
} from './train-supervise-options';
export { stepDownOptions } from './step-down-options';
/** soup train's resume mode from --resume (`force` refused, with its sentence). */
export { trainResumeOf } from './train-supervise-options';
/** How a soup train session ends: exit code (the caller's numbers), result, closing lines, the loss shown. */
export {
  trainEndOf,
  type TrainEnd,
  type TrainEndOptions,
  type TrainExitCodes,
  type NotPushedResult,
} from './train-end';
/** soup train's sentences: the run's start, the segment, the child's reports, the session end. */
export { describeTrainStart, describeTrainSegment, describeTrainReport, describeSessionEnd } from './train-sentences';
export { sessionMemoryWatch, type SessionMemoryWatch, type MemoryHoldOptions } from './session-memory-watch';
export { trainBudgetHold } from './train-budget-hold';
/** The budget a trainer command is held to: the one given, else what the CPU can reach, else the GPU's memory. */
export { commandBudgetHold, type CommandBudgetHoldOptions } from './command-budget-hold';
export { trainRunFingerprint } from './train-run-fingerprint';
export { ownOffloadScratch, removeEmptyScratch } from './offload-scratch';
export { superviseTrain, type SuperviseTrainOptions } from './supervise-train';
