export {
  validateConfig,
  type SoupConfig,
  type ValidateConfigOptions,
  type ValidateConfigResult,
  type GradCkptSetting,
} from './validate-config';
export { loadConfig, type LoadConfigOptions, type LoadedConfig } from './load-config';
export { configWithOverrides, type ConfigOverrides } from './config-with-overrides';
export { didYouMean, type DidYouMeanOptions } from './did-you-mean';
export { parseBytes } from './parse-bytes';
export { durationProblem, parseDuration } from './parse-duration';
export { parseDevice, type DeviceSpec } from './parse-device';
export { parseHeadroom } from './parse-headroom';
export { runFingerprint, type RunFingerprint, type RunFingerprintOptions, type RunIdentity } from './run-fingerprint';
export { schemaPath } from './schema-path';
export {
  SoupConfigError,
  ConfigError,
  formatIssue,
  type SoupConfigErrorCode,
  type ConfigIssue,
} from './errors';
