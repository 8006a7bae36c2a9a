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
