export { systemClock, type Clock } from './clock';
export { HubStore, type HubStoreOptions, type RetryOptions } from './hub-store';
export { DirStore, type DirStoreOptions } from './dir-store';
export { openStore, type OpenStoreOptions } from './open-store';
export { redactArgv } from './redact-argv';
export {
  resolveHubToken,
  cleanHubToken,
  describeHubTokenSearch,
  type ResolveHubTokenOptions,
  type ResolvedHubToken,
  type HubTokenAttempt,
  type HubTokenPlace,
} from './resolve-hub-token';
export {
  pushCheckpoint,
  type PushCheckpointOptions,
  type PushPhase,
  type PushPhaseEvent,
  type PushResult,
} from './push-checkpoint';
export { trackPushProgress, PUSH_PROGRESS_TOTAL, type PushProgress } from './push-progress';
export {
  createPushQueue,
  defaultMinCommitIntervalMs,
  DEFAULT_HUB_MIN_COMMIT_INTERVAL_MS,
  type CommitQuotaEvent,
  type PushQueue,
  type PushQueueOptions,
  type PushJob,
} from './push-queue';
export { DEFAULT_SQUASH_AFTER_COMMITS } from './_auto-squash';
export { pushFinal, type PushFinalOptions } from './push-final';
export { resolveResume, type ResolveResumeOptions, type ResumeOutcome } from './resolve-resume';
export { pullCheckpoint, type PullCheckpointOptions, type PullResult } from './pull-checkpoint';
export { pullResume, type PullResumeOptions, type PullResumeResult, type SkippedCheckpoint } from './pull-resume';
export { pullResumeInto, type PullResumeIntoOptions, type PullResumeIntoResult } from './pull-resume-into';
export { pullPointed, type PullPointedOptions, type PullPointedResult } from './pull-pointed';
export { localCheckpointStep, type LocalCheckpointStepOptions } from './local-checkpoint-step';
export { localCheckpoint, type LocalCheckpointOptions } from './local-checkpoint';
export { readStoredJson, type ReadStoredJsonOptions } from './read-stored-json';
export {
  pushRecord,
  pullRecord,
  statusRecord,
  listRecord,
  resumeRecord,
  type PushRecord,
  type PullRecord,
  type StatusRecord,
  type ListRecord,
  type ResumeRecord,
} from './checkpoint-records';
export {
  describePush,
  describePull,
  describeStatus,
  describeList,
  describeResume,
  type DescribeStyle,
  type DescribedLine,
} from './describe-checkpoints';
export { verifyCheckpoint, type VerifyCheckpointOptions, type VerifyCheckpointResult } from './verify-checkpoint';
export { buildManifest, type BuildManifestOptions, type BuiltManifest } from './build-manifest';
export { planSegment, type PlanSegmentOptions, type SegmentPlan } from './plan-segment';
export {
  checkpointStatus,
  type CheckpointStatusOptions,
  type CheckpointStatus,
  type CheckpointStatusEntry,
} from './checkpoint-status';
export { validatePointer } from './validate-pointer';
export { validateManifest } from './validate-manifest';
export { pointerSchema, manifestSchema } from './json-schemas';
export {
  HubCkptError,
  type HubCkptErrorCode,
  InvalidCheckpointOptionError,
  StoreError,
  HubAuthError,
  StaleRunError,
  CorruptCheckpointError,
  VerifyError,
  ChecksumError,
  UnsafePathError,
  PointedCheckpointConflictError,
  PullTargetExistsError,
  StoreMissingError,
  PullIntegrityError,
  ConcurrentWriteError,
  LinkedEntryError,
  PointerRegressionError,
  UnsafeLinkError,
  LeaseHeldError,
  LeaseLostError,
  FolderConflictError,
  DiskFullError,
  CommitQuotaError,
} from './errors';
export {
  acquireLease,
  DEFAULT_HUB_LEASE_TTL_MS,
  DEFAULT_LEASE_TTL_MS,
  defaultLeaseTtlMs,
  LEASE_PATH,
  type AcquireLeaseOptions,
  type StoreLease,
  type LeaseRide,
  type LeaseInfo,
} from './store-lease';
export { identityHere, processLiveness, processStart, type HolderIdentity } from './_lease-identity';
export { parseProcStat, readProcStat, type ProcStat } from './proc-stat';
export type {
  CheckpointStore,
  StoreEntry,
  StoreOperation,
  StoreCommitParams,
  IfMatch,
  CommitProgress,
  LocalStaging,
  Pointer,
  Manifest,
  HubCkptLogger,
  ValidationResult,
} from './types';
export {
  openCheckpointStore,
  checkEndpoint,
  defaultStoreDir,
  type OpenCheckpointStoreOptions,
} from './open-checkpoint-store';
export {
  listCheckpoints,
  type CheckpointList,
  type ListCheckpointsOptions,
  type ListedCheckpoint,
} from './list-checkpoints';
export { openSessionStore, type OpenSessionStoreOptions, type SessionStore } from './open-session-store';
export { isDiskFull } from './is-disk-full';
