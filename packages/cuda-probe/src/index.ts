export { createOrtProbe, type CreateOrtProbeOptions, type OrtProbeSessionOptions } from './create-ort-probe';
export { createTrainStepProbe, type CreateTrainStepProbeOptions, type ProbeGptSpec } from './create-train-step-probe';
export { createCommandProbe, type CreateCommandProbeOptions } from './create-command-probe';
export { splitCommand } from './_argv';
export {
  checkStepsEvidence,
  startStepsCount,
  type StepsCount,
  type StepsEvidence,
  type StepsEvidenceNames,
} from './steps-seen';
export {
  classifyOutOfMemory,
  type OutOfMemoryClassification,
  type OutOfMemoryKind,
  type ExcludedKind,
} from './classify-out-of-memory';
export { deviceIdentity, type DeviceIdentity, type DeviceIdentityOptions } from './device-identity';
export { reachableMemory, type ReachableMemory, type ReachableMemoryOptions } from './reachable-memory';
export type { WorkerProbeOptions } from './_worker-options';
export type { ChildProbeFn, ProbeTrialOutcome, ProbeMeasurement, MemoryCgroupReport } from './types';
export {
  runInMemoryCgroup,
  memoryCgroupSupport,
  type RunInMemoryCgroupOptions,
  type MemoryCgroupRun,
  type MemoryCgroupCounters,
  type MemoryCgroupSupport,
} from './run-in-memory-cgroup';
export {
  CudaProbeError,
  type CudaProbeErrorCode,
  ProbeOptionsError,
  ProbeTimeoutError,
  ProbeChildError,
  DeviceQueryError,
  PeerDependencyMissingError,
  MemoryCgroupUnavailableError,
} from './errors';
export { judgeTrainerExit, type TrainerExitFacts, type TrainerExitVerdict } from './judge-trainer-exit';
export { createTrainerOomJudge, type TrainerOomJudge } from './trainer-oom-judge';
export {
  createTreeMemoryReader,
  type TreeMemoryReader,
  type TreeMemoryReaderOptions,
  type TreeMemoryReading,
} from './create-tree-memory-reader';
export { resetHighWaterMark, highWaterMarkBytes, type EarlierPeak } from './high-water-mark';
export { stepOomLine, trainerOomLine, type TrainerExitTails } from './out-of-memory-line';
