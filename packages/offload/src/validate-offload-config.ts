import { checkOffloadConfig, type OffloadConfigParams } from './check-offload-config';

/**
 * The Python original's `validate_offload_config`: the list of error messages, empty when the
 * config is valid or offloading is disabled. {@link checkOffloadConfig} also returns warnings.
 */
export function validateOffloadConfig(params: OffloadConfigParams): string[] {
  return checkOffloadConfig(params).errors;
}
