export {
  chooseConfiguration,
  peakIsLower,
  SAME_PEAK_FRACTION,
  samplesPerSecond,
  type MeasuredCandidate,
  type CandidateSpeed,
  type ConfigurationChoice,
} from './choose-configuration';
export {
  lookupTuneEntry,
  saveTuneEntry,
  makeTuneKey,
  resolveTuneCachePath,
  TUNE_CACHE_VERSION,
  type TuneEntry,
  type TuneRow,
} from './tune-cache';
export {
  tuneExec,
  candidatesOf,
  fillLevers,
  type TuneExecOptions,
  type TuneExecResult,
  type FitAnswer,
  type OneStepTrial,
} from './tune-exec';
export {
  tune,
  withEarlyStops,
  labelOf,
  type TuneOptions,
  type TuneResult,
  type TuneCandidate,
  type TuneFit,
  type TuneTiming,
  type TuneContext,
  type TuneSearch,
  type TieAgain,
  type TuneCacheOptions,
  type TuneEvent,
} from './tune';
export { commandFit, commandTime, type CommandSearch, type CommandTrial } from './command-adapter';
export { parseTries } from './parse-tries';
export { checkTries, type CheckTriesOptions } from './check-tries';
export {
  tuneTrain,
  pastItsBest,
  TRAIN_TIERS,
  type TuneTrainOptions,
  type TrainTuneResult,
  type MicroFit,
} from './tune-train';
export {
  timeTrainStep,
  timeAlternately,
  timeSideBySide,
  openWarmStep,
  fastestHalf,
  samplesPerSecondAt,
  type StepToTime,
  type StepOffload,
  type StepGptSpec,
  type StepSession,
  type StepBatch,
  type StepTiming,
  type OpenStep,
  type SideTiming,
  type WinLimit,
  type LimitOf,
} from './step-timing';
export {
  globalStepMs,
  globalStepAt,
  stepAtGlobal,
  samplesPerSecondOf,
  perMicroBatch,
  timeUpdate,
  type UpdateTiming,
} from './global-step';
export { clockOf, stepBy, pooledVariance, CLOCKS_AGREE_FRACTION, type TimedRun, type Clock } from './output-clock';
export { rowSteps, noteWithWarmUp, type RowStep, type RowSteps } from './warm-up';
export type { FitTrial } from './kept-sessions';
export { TuneError, NothingTimedError, NothingChosenError, type TuneErrorCode } from './errors';
export { measureTrainGrid, gridBest, headToHead, type GridPoint, type GridModel } from './grid';
