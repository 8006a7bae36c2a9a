export {
  supervise,
  STOP_SIGNALS,
  type SuperviseOptions,
  type SuperviseOutcome,
  type SuperviseEvent,
  type SuperviseTopic,
  type SessionFacts,
} from './supervise';
export { startMemoryWatch, type MemoryOver, type MemoryWatch, type MemoryWatchOptions } from './memory-watch';
export { trackNewestStep, type NewestStep } from './newest-step';
export {
  createCheckpointWatcher,
  globToRegExp,
  stepOfName,
  signatureOf,
  type CheckpointWatcher,
  type CheckpointWatcherOptions,
  type WatchedCheckpoint,
  type CompleteReason,
} from './watch-checkpoints';
export {
  snapshotCheckpoint,
  snapshotChange,
  clearSnapshots,
  SNAPSHOTS_DIR,
  SNAPSHOT_COPY_LIMIT_BYTES,
  type CheckpointSnapshot,
  type SnapshotResult,
} from './snapshot-checkpoint';
export {
  startTrainer,
  expandArgv,
  placeholdersIn,
  trainerEnv,
  trainerErrorLine,
  type Placeholders,
  type TrainerChild,
  type TrainerExit,
  type StartTrainerOptions,
} from './trainer-child';
export { DONE_MARKER, judgeHorizon, readTrainerState, type HorizonVerdict, type TrainerStateSteps } from './horizon';
export { acquireOutputLock, sameProcessAlive, LOCK_NAME, type LockRecord, type OutputLock } from './lock';
// The start time a lock records is the store lease's: one reader of /proc/<pid>/stat, in @soup/hub-ckpt.
export { processStart } from '@soup/hub-ckpt';
export { stageFinal, holdsWeights, WEIGHT_FILE, type StagedFinal } from './stage-final';
export { modelWeightFiles, TRAINING_STATE_FILE, weightsFormatOf, type WeightsFormat } from './model-weights';
export { resumeSupervised, fileCheckpointIn, FILE_CHECKPOINT_RECORD, type SupervisedResume } from './resume-supervised';
export {
  identityOf,
  supervisedFingerprint,
  describeIdentityChange,
  readRunRecord,
  writeRunRecord,
  RUN_RECORD_PATH,
  type RunRecord,
  type OomStepDown,
  type SupervisedSession,
  type SessionMemory,
  type SupervisedIdentity,
} from './run-identity';
export {
  SupervisorError,
  SupervisorUsageError,
  OutputLockedError,
  StaleRecordError,
  MicroAgreementError,
  type SupervisorErrorCode,
} from './errors';
export { agreeMicroBatch, type AgreedMicroBatch, type NodeMicroAnswer } from './agree-micro-batch';
export { agreeAcrossNodes, exchangeMicroAnswers } from './agree-across-nodes';
export {
  emptySessionResult,
  segmentReasonOf,
  microBatchFields,
  memoryReportOf,
  secondsOf,
  type SessionResult,
  type SessionPeakReport,
  type SegmentReason,
  type BudgetSource,
} from './session-result';
export {
  resolveMemoryBudget,
  resolveMaxMemory,
  maxMemoryBytesOf,
  type ResolveMemoryBudgetOptions,
} from './memory-budget';
export { microBatchText } from './_tell';
export { readMicroSessions, previousMicroBatch, type MicroSession } from './micro-sessions';
export { resolveStopSignal } from './session-end';
/**
 * The signals that end a session, and a judge of a later one: a platform's sequence of different kinds (systemd's
 * SIGTERM then SIGHUP, SLURM's SIGUSR1 then SIGTERM) is one session end; a kind already received quits at once.
 */
export { SESSION_SIGNALS, signalKind, createSignalJudge, type SignalVerdict } from './signal-judge';
export { nodeRoleOf, type NodeRole, type NodeRoleInput } from './node-role';
export { requeueSlurmJob, type RequeueResult } from './slurm-requeue';
export { describeRefusal, diffIdentity, type DescribeRefusalOptions } from './describe-refusal';
/** A session's memory peak as its summary line, and the tuner's own peak beside it (measured apart). */
export { describeSessionPeak, describeTuningPeak } from './describe-session-peak';
/** The micro-batch a session trains with, and the one the last session trained with when it differs. */
export { describeMicroBatch } from './describe-micro-batch';
/** A segment's closing sentence: why the session ended, the step the store points at, run the same command again. */
export { describeSegmentSaved } from './describe-segment-saved';
export { trackSession, endReasonOf, type SessionTrack, type EndReason } from './track-session';
export { sessionResultOf } from './session-result-of';
export { supervisedResultOf, type SessionExitCodes } from './supervised-result-of';
